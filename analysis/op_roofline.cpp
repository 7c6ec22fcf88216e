#include "analysis/op_roofline.hpp"

#include <algorithm>

#include "dispatcher/descriptor/dtype.hpp"
#include "dispatcher/descriptor/window_reach.hpp"

namespace convjit::analysis {

namespace {

double elements(const Dims5& dims, int rank) {
  double n = 1;
  for (int i = 0; i < rank; ++i) n *= static_cast<double>(dims[static_cast<std::size_t>(i)]);
  return n;
}

}  // namespace

OpWork op_work(const OpDescriptor& d) {
  const double size = static_cast<double>(element_size(d.dtype));
  const double x = elements(d.x_dims, d.rank()), y = elements(d.y_dims, d.rank());
  if (d.kind == OpKind::bias_grad) return {0, (y + static_cast<double>(d.y_dims[1])) * size};
  if (d.is_resize()) return {0, (x + y) * size};  // each element once, in either direction
  if (d.is_batchnorm()) {
    // Training reads its inputs twice: a statistics pass, then the
    // elementwise pass (a large activation does not stay in L2 between).
    const double reads = d.has_norm_flag(kNormInference) ? 1.0 : 2.0;
    const double inputs = d.direction == Direction::fwd ? x : x + y;
    return {0, (reads * inputs + (d.direction == Direction::fwd ? y : x)) * size};
  }
  if (d.is_pool()) {
    if (d.direction == Direction::fwd) return {0, (x + y) * size};
    // dx and dy, and x for max pooling's argmax.
    return {0, (d.pool_mode == PoolingMode::max ? 2 * x + y : x + y) * size};
  }
  // Each y element takes C/G times the filter's taps, in every direction.
  const double w = elements(d.w_dims, d.rank());
  const double taps = w / static_cast<double>(d.w_dims[0]);
  // A fused epilogue reads the bias and the residual too.
  const double bias = d.has_bias() ? static_cast<double>(d.w_dims[0]) : 0.0;
  const double residual = d.has_residual() ? y : 0.0;
  return {2.0 * y * taps, (x * window_reach_fraction(d) + w + y + bias + residual) * size};
}

Roofline roofline(const OpWork& work, const DevicePeaks& peaks, double compute_tflops) {
  const double compute_ms = work.flop / (compute_tflops * 1e12) * 1e3;
  const double memory_ms = work.bytes / (peaks.bandwidth_gbs * 1e9) * 1e3;
  return {std::max(compute_ms, memory_ms), compute_ms > memory_ms};
}

}  // namespace convjit::analysis
