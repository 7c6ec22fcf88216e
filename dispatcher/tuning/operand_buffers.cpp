#include "dispatcher/tuning/operand_buffers.hpp"

#include <algorithm>
#include <cmath>

#include "dispatcher/descriptor/operand_layout.hpp"

namespace convjit {

namespace {

void fill_random(std::vector<unsigned char>& bytes, DataType dtype, std::mt19937& rng) {
  std::uniform_real_distribution<double> dist(-1, 1);
  for (std::size_t i = 0; i < bytes.size() / element_size(dtype); ++i)
    store_element(bytes.data(), i, dtype, dist(rng));
}

}  // namespace

OperandBuffers::OperandBuffers(const OpDescriptor& d, std::mt19937& rng)
    : x(slot_bytes(d, Slot::x)),
      w(slot_bytes(d, Slot::w)),
      dy(slot_bytes(d, Slot::y)),
      out(output_bytes(d)),
      bias(d.has_bias() ? static_cast<std::size_t>(d.w_dims[0]) * element_size(d.dtype) : 0),
      residual(d.has_residual() ? slot_bytes(d, Slot::y) : 0) {
  for (auto* b : {&x, &w, &dy, &bias, &residual}) fill_random(*b, d.dtype, rng);
  args.x = reads_slot(d, Slot::x) ? x.data() : nullptr;
  args.w = reads_slot(d, Slot::w) ? w.data() : nullptr;
  args.dy = reads_slot(d, Slot::y) ? dy.data() : nullptr;
  args.out = out.data();
  args.bias = d.has_bias() ? bias.data() : nullptr;
  args.residual = d.has_residual() ? residual.data() : nullptr;
}

double max_relative_error(std::span<const unsigned char> got, std::span<const unsigned char> want,
                          DataType dtype) {
  double worst = 0;
  for (std::size_t i = 0; i < got.size() / element_size(dtype); ++i) {
    const double a = load_element(got.data(), i, dtype), b = load_element(want.data(), i, dtype);
    if (std::isnan(a) != std::isnan(b)) return INFINITY;
    if (!std::isnan(b)) worst = std::max(worst, std::abs(a - b) / std::max(1.0, std::abs(b)));
  }
  return worst;
}

}  // namespace convjit
