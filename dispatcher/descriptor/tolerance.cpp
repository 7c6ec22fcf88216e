#include "dispatcher/descriptor/tolerance.hpp"

#include <algorithm>
#include <cmath>

namespace convjit {

long long reduction_length(const OpDescriptor& d) {
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
