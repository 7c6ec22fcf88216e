#include "dispatcher/tuning/operand_buffers.hpp"

#include <algorithm>
#include <cmath>

#include "dispatcher/descriptor/operand_layout.hpp"

namespace convjit {

namespace {

void fill_random(std::vector<unsigned char>& bytes, DataType dtype, std::mt19937& rng,
                 double lo = -1, double hi = 1) {
  std::uniform_real_distribution<double> dist(lo, hi);
  for (std::size_t i = 0; i < bytes.size() / element_size(dtype); ++i)
    store_element(bytes.data(), i, dtype, dist(rng));
}

void add_norm_operands(OperandBuffers& b, const OpDescriptor& d, std::mt19937& rng) {
  const DataType type = norm_param_dtype(d.dtype);
  const std::size_t bytes = static_cast<std::size_t>(d.x_dims[1]) * element_size(type);
  for (auto* v : {&b.scale, &b.shift, &b.running_mean, &b.running_var, &b.mean, &b.invstd,
                  &b.scale_grad, &b.shift_grad})
    v->assign(bytes, 0);
  for (auto* v : {&b.scale, &b.shift, &b.running_mean, &b.mean}) fill_random(*v, type, rng);
  for (auto* v : {&b.running_var, &b.invstd}) fill_random(*v, type, rng, 0.5, 1.5);
  NormOperands& n = b.args.norm;
  n.scale = d.has_norm_flag(kNormScale) ? b.scale.data() : nullptr;
  n.shift = d.has_norm_flag(kNormShift) ? b.shift.data() : nullptr;
  n.running_mean = b.running_mean.data(), n.running_var = b.running_var.data();
  n.mean = b.mean.data(), n.invstd = b.invstd.data();
  n.scale_grad = b.scale_grad.data(), n.shift_grad = b.shift_grad.data();
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
  if (d.is_batchnorm()) add_norm_operands(*this, d, rng);
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
