#include "dispatcher/descriptor/canonical_layout.hpp"

namespace convjit {

View5 canonical_view(const Dims5& dims, const Dims5& strides, int spatial_dims) {
  View5 v;
  v.dims = {dims[0], dims[1], 1, 1, 1};
  v.strides = {strides[0], strides[1], 0, 0, 0};
  const int first = 2 + (3 - spatial_dims);
  for (int i = 0; i < spatial_dims; ++i) {
    v.dims[static_cast<std::size_t>(first + i)] = dims[static_cast<std::size_t>(2 + i)];
    v.strides[static_cast<std::size_t>(first + i)] = strides[static_cast<std::size_t>(2 + i)];
  }
  return v;
}

Window3 canonical_window(const OpDescriptor& d) {
  Window3 w;
  const int first = 3 - d.spatial_dims;
  for (int i = 0; i < d.spatial_dims; ++i) {
    const auto src = static_cast<std::size_t>(i);
    const auto dst = static_cast<std::size_t>(first + i);
    w.size[dst] = d.is_conv() ? d.w_dims[src + 2] : d.window[src];
    w.pad_begin[dst] = d.pad_begin[src];
    w.pad_end[dst] = d.pad_end[src];
    w.stride[dst] = d.stride[src];
    w.dilation[dst] = d.dilation[src];
  }
  return w;
}

}  // namespace convjit
