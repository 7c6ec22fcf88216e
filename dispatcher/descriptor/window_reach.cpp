#include "dispatcher/descriptor/window_reach.hpp"

#include <algorithm>
#include <vector>

namespace convjit {

namespace {

// The positions of an axis of `size` that windows reach: output o's tap t
// at o stride + t dilation - pad, inside the axis.  Counted one by one,
// since padding, dilation and a stride wider than the window each leave
// gaps or clip the ends (a valid 3 x 3 conv of stride 1 reaches every
// position though it has two outputs fewer).
double reached_positions(std::int64_t size, std::int64_t outputs, std::int64_t taps,
                         std::int64_t stride, std::int64_t dilation, std::int64_t pad) {
  std::vector<bool> reached(static_cast<std::size_t>(size), false);
  for (std::int64_t o = 0; o < outputs; ++o)
    for (std::int64_t t = 0; t < taps; ++t)
      if (const std::int64_t p = o * stride + t * dilation - pad; p >= 0 && p < size)
        reached[static_cast<std::size_t>(p)] = true;
  return static_cast<double>(std::count(reached.begin(), reached.end(), true));
}

}  // namespace

double window_reach_fraction(const OpDescriptor& d) {
  if (d.kind != OpKind::conv || d.direction == Direction::bwddata) return 1.0;
  double reached = 1.0;
  for (int i = 0; i < d.spatial_dims; ++i) {
    const auto at = static_cast<std::size_t>(i), dim = at + 2;
    reached *= reached_positions(d.x_dims[dim], d.y_dims[dim], d.w_dims[dim], d.stride[at],
                                 d.dilation[at], d.pad_begin[at]) /
               static_cast<double>(d.x_dims[dim]);
  }
  return reached;
}

}  // namespace convjit
