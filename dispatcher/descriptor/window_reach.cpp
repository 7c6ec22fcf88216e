#include "dispatcher/descriptor/window_reach.hpp"

#include <algorithm>
#include <vector>

namespace convjit {

double window_reach_elements(const OpDescriptor& d) {
  double n = static_cast<double>(d.x_dims[0]) * static_cast<double>(d.x_dims[1]);
  for (int i = 0; i < d.spatial_dims; ++i) {
    const auto at = static_cast<std::size_t>(i), dim = at + 2;
    const double axis = static_cast<double>(d.x_dims[dim]);
    if (d.kind != OpKind::conv || d.direction == Direction::bwddata) {
      n *= axis;
      continue;
    }
    const std::int64_t stride = d.stride[at];
    std::vector<bool> offset(static_cast<std::size_t>(stride), false);
    for (std::int64_t t = 0; t < d.w_dims[dim]; ++t)
      offset[static_cast<std::size_t>(t * d.dilation[at] % stride)] = true;
    const auto offsets = static_cast<double>(std::count(offset.begin(), offset.end(), true));
    n *= std::min(axis, static_cast<double>(d.y_dims[dim]) * offsets);
  }
  return n;
}

}  // namespace convjit
