#include "dispatcher/backends/jit/stride_phases.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "dispatcher/descriptor/canonical_layout.hpp"

namespace convjit {

namespace {

// A phase's dy offsets along one axis: of its first tap (w's last one that
// lands on the phase) and its last; none where no tap does.
struct PhaseOffsets {
  bool any = false;
  std::int64_t first = 0, last = 0;
};

PhaseOffsets phase_offsets(std::int64_t phase, std::int64_t stride, std::int64_t pad,
                           std::int64_t dilation, std::int64_t taps) {
  const std::int64_t step = stride / std::gcd(stride, dilation);
  const auto offset = [&](std::int64_t r) { return (phase + pad - r * dilation) / stride; };
  for (std::int64_t r = taps - 1; r >= 0 && r > taps - 1 - step; --r)
    if (((phase + pad - r * dilation) % stride + stride) % stride == 0)
      return {true, offset(r), offset(r % step)};
  return {};
}

}  // namespace

StridePhases stride_phases(const OpDescriptor& d) {
  const Window3 win = canonical_window(d);
  const View5 dx = canonical_view(d.x_dims, d.x_strides, d.spatial_dims);
  StridePhases out;
  for (std::size_t a = 0; a < 3; ++a) {
    const std::int64_t s = win.stride[a], size = dx.dims[a + 2];
    std::int64_t least = std::numeric_limits<std::int64_t>::max();
    std::int64_t most = std::numeric_limits<std::int64_t>::min();
    PhaseAxis& axis = out.axis[a];
    axis.with_taps = 0;
    for (std::int64_t phase = 0; phase < s; ++phase) {
      const PhaseOffsets o =
          phase_offsets(phase, s, win.pad_begin[a], win.dilation[a], win.size[a]);
      if (!o.any) continue;
      ++axis.with_taps;
      if (phase >= size) continue;  // no pixels of dx
      least = std::min(least, o.first);
      most = std::max(most, o.last);
    }
    axis.extent = (size + s - 1) / s;
    if (least != std::numeric_limits<std::int64_t>::max())
      axis.origin = least, axis.reach = most - least;
    out.count *= s;
    out.with_taps *= axis.with_taps;
  }
  return out;
}

}  // namespace convjit
