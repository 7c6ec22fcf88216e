#include "dispatcher/backends/reference/tensor_view.hpp"

#include <algorithm>

namespace convjit::reference {

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
