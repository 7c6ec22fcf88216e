#include "dispatcher/tuning/tuning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <span>

#include "dispatcher/backends/reference/reference_backend.hpp"
#include "dispatcher/cuda/staged_operands.hpp"
#include "dispatcher/descriptor/operand_layout.hpp"
#include "dispatcher/descriptor/tolerance.hpp"
#include "dispatcher/tuning/kernel_timing.hpp"
#include "dispatcher/tuning/operand_buffers.hpp"

namespace convjit {

namespace {

std::int64_t batch_item_span(const Dims5& dims, const Dims5& strides, int rank) {
  std::int64_t last = 0;
  for (int i = 1; i < rank; ++i) last += (dims[i] - 1) * strides[i];
  return last + 1;
}

// True when every batch entry > 0 lies past offset strides[0] in each
// batched slot, so zeroing from there on clears exactly those entries.
bool batch_is_outermost(const OpDescriptor& d) {
  if (d.kind == OpKind::bias_grad)
    return d.y_strides[0] >= batch_item_span(d.y_dims, d.y_strides, d.rank());
  return d.x_strides[0] >= batch_item_span(d.x_dims, d.x_strides, d.rank()) &&
         d.y_strides[0] >= batch_item_span(d.y_dims, d.y_strides, d.rank());
}

void zero_past_first_batch_entry(std::vector<unsigned char>& bytes, std::int64_t batch_stride,
                                 DataType dtype) {
  const std::size_t from = static_cast<std::size_t>(batch_stride) * element_size(dtype);
  if (from < bytes.size()) std::fill(bytes.begin() + static_cast<std::ptrdiff_t>(from), bytes.end(), 0);
}

// The reference's output for the operands, and how many leading bytes of
// a candidate's output it covers.
struct Expected {
  std::vector<unsigned char> out;
  std::size_t compared_bytes = 0;
};

Expected reference_output(const OpDescriptor& desc, const OperandBuffers& host, bool sliced) {
  const OpDescriptor checked = sliced ? batch_slice(desc) : desc;
  Expected expected{std::vector<unsigned char>(host.out.size()), output_bytes(checked)};
  ExecArgs args = host.args;
  args.out = expected.out.data();
  args.alpha = 1, args.beta = 0;
  run_reference(checked, args);
  return expected;
}

double max_error_over(const std::vector<unsigned char>& got, const Expected& expected,
                      DataType dtype) {
  return max_relative_error(std::span(got).first(expected.compared_bytes),
                            std::span(expected.out).first(expected.compared_bytes), dtype);
}

}  // namespace

std::string TuningCandidate::label() const {
  return variant_label(backend, variant);
}

OpDescriptor batch_slice(const OpDescriptor& desc) {
  OpDescriptor slice = desc;
  if (desc.kind != OpKind::bias_grad) slice.x_dims[0] = 1;
  slice.y_dims[0] = 1;
  return slice;
}

Result<TuningChoice> choose_by_measurement(const OpDescriptor& desc, const convjit_device_t& device,
                                           std::vector<TuningCandidate>& candidates) {
  std::mt19937 rng(2026);
  OperandBuffers host(desc, rng);
  const bool sliced = desc.y_dims[0] > 1 && batch_is_outermost(desc);
  if (sliced)
    for (auto [bytes, stride] : {std::pair{&host.x, desc.x_strides[0]}, {&host.dy, desc.y_strides[0]}})
      zero_past_first_batch_entry(*bytes, stride, desc.dtype);
  std::shared_ptr<DeviceContext> context;
  if (device.kind == CONVJIT_DEVICE_CUDA) {
    auto opened = DeviceContext::open(device.ordinal);
    if (!opened.is_ok()) return opened.status();
    context = opened.value();
  }
  const StagedOperands staged(context, host);
  if (!staged.status().is_ok()) return staged.status();
  for (TuningCandidate& c : candidates) {
    auto ms = median_kernel_ms(*c.kernel, staged.args(), staged.context());
    c.ms = ms.is_ok() ? ms.value() : -1;
    c.result = ms.is_ok() ? fmt::format("{:.4f} ms", ms.value()) : "failed: " + ms.status().message();
  }
  std::vector<std::size_t> order(candidates.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return (candidates[a].ms >= 0 ? candidates[a].ms : 1e300) <
           (candidates[b].ms >= 0 ? candidates[b].ms : 1e300);
  });
  std::optional<Expected> expected;
  std::optional<std::size_t> winner;
  for (std::size_t i : order) {
    TuningCandidate& c = candidates[i];
    if (c.ms < 0) continue;
    if (c.backend == "reference") {  // the yardstick itself
      winner = i;
      break;
    }
    if (!expected) expected = reference_output(desc, host, sliced);
    if (Status s = c.kernel->execute(staged.args()); !s.is_ok()) {
      c.result = "failed: " + s.message();
      continue;
    }
    auto got = staged.output();
    if (!got.is_ok()) return got.status();
    const double error = max_error_over(got.value(), *expected, desc.dtype);
    if (error <= kernel_tolerance(desc)) {
      winner = i;
      break;
    }
    c.result += fmt::format(" but wrong (max error {:.2e} > {:.0e})", error,
                            kernel_tolerance(desc));
  }
  std::string summary;
  for (std::size_t i : order)
    summary += fmt::format("{}{} {}", summary.empty() ? "" : ", ", candidates[i].label(),
                           candidates[i].result);
  if (!winner) return Status::not_available("no candidate is usable: " + summary);
  const TuningCandidate& best = candidates[*winner];
  // The margin over the next fastest that ran; faster ones were wrong or failed.
  const auto winner_at = std::find(order.begin(), order.end(), *winner);
  for (std::size_t i : std::span(winner_at + 1, order.end()))
    if (candidates[i].ms > 0 && best.ms > 0) {
      summary += fmt::format("; {} won, {:.2f}x as fast as {}", best.label(),
                             candidates[i].ms / best.ms, candidates[i].label());
      break;
    }
  return TuningChoice{*winner, summary};
}

}  // namespace convjit
