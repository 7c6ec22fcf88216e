#include "dispatcher/backends/jit/bwddata_as_forward.hpp"

#include <cstddef>
#include <cstdint>
#include <utility>

namespace convjit {

bool unit_stride_bwddata(const OpDescriptor& d) {
  return d.kind == OpKind::conv && d.direction == Direction::bwddata && d.has_unit_stride();
}

OpDescriptor transposed_filters(const OpDescriptor& d) {
  OpDescriptor t = d;
  std::swap(t.w_dims[0], t.w_dims[1]);
  std::swap(t.w_strides[0], t.w_strides[1]);
  return t;
}

OpDescriptor bwddata_operands_as_forward(const OpDescriptor& d) {
  OpDescriptor e = transposed_filters(d);
  e.direction = Direction::fwd;
  std::swap(e.x_dims, e.y_dims);
  std::swap(e.x_strides, e.y_strides);
  return e;
}

OpDescriptor bwddata_as_forward(const OpDescriptor& d) {
  OpDescriptor e = bwddata_operands_as_forward(d);
  for (std::size_t i = 0; i < static_cast<std::size_t>(d.spatial_dims); ++i) {
    const std::int64_t reach = d.dilation[i] * (d.w_dims[i + 2] - 1);
    e.pad_begin[i] = reach - d.pad_begin[i];
    e.pad_end[i] = reach - d.pad_end[i];
  }
  return e;
}

}  // namespace convjit
