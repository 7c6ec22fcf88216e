#include "tensor_view.hpp"

#include <algorithm>

namespace convjit::reference {

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

namespace {
std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
}  // namespace

TapRange valid_taps(std::int64_t out_index, std::int64_t input, std::int64_t taps,
                    std::int64_t pad_begin, std::int64_t stride, std::int64_t dilation) {
  const std::int64_t start = out_index * stride - pad_begin;  // input index of tap 0
  // start + t*dilation >= 0  and  start + t*dilation <= input - 1
  const std::int64_t begin = std::max<std::int64_t>(0, -floor_div(start, dilation));
  const std::int64_t end = std::min(taps, floor_div(input - 1 - start, dilation) + 1);
  return {begin, std::max(begin, end)};
}

}  // namespace convjit::reference
