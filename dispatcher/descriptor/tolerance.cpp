#include "dispatcher/descriptor/tolerance.hpp"

#include <algorithm>
#include <cmath>

namespace convjit {

namespace {

// Batchnorm: its statistics sum every value of a channel.  Resize fwd: the
// taps of one output; bwd: the most outputs one input receives from.
long long norm_or_resize_length(const OpDescriptor& d) {
  long long length = d.is_batchnorm() ? d.x_dims[0] : 1;
  for (std::size_t i = 2; i < static_cast<std::size_t>(d.rank()); ++i) {
    const std::int64_t in = std::max<std::int64_t>(d.x_dims[i], 1), out = d.y_dims[i];
    const long long taps = d.resize_mode == ResizeMode::linear ? 2 : 1;
    if (d.is_batchnorm()) {
      length *= in;
    } else {
      length *= d.direction == Direction::fwd ? taps : taps * ((out + in - 1) / in + 1);
    }
  }
  return length;
}

}  // namespace

long long reduction_length(const OpDescriptor& d) {
  if (d.is_batchnorm() || d.is_resize()) return norm_or_resize_length(d);
  long long taps = 1, outputs = d.y_dims[0], window = 1;
  for (std::size_t i = 0; i < static_cast<std::size_t>(d.spatial_dims); ++i) {
    taps *= d.is_conv() ? d.w_dims[2 + i] : 1;
    outputs *= d.y_dims[2 + i];
    window *= d.is_pool() ? d.window[i] : 1;
  }
  if (d.kind == OpKind::bias_grad) return outputs;
  if (d.is_pool()) return window;
  switch (d.direction) {
    case Direction::bwddata:
      return taps * (d.w_dims[0] / std::max<std::int64_t>(d.groups, 1));
    case Direction::bwdfilt:
      return outputs;
    default:
      return taps * d.w_dims[1];
  }
}

double tf32_tolerance(long long length) {
  return 0x1p-10 * std::sqrt(static_cast<double>(length)) + f32_tolerance(length);
}

double kernel_tolerance(const OpDescriptor& d) {
  return d.dtype == DataType::f32 ? f32_tolerance(reduction_length(d)) : kernel_tolerance(d.dtype);
}

}  // namespace convjit
