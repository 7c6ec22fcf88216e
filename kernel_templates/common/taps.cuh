// Which filter or window taps of an output element fall inside the input.
#pragma once
#include "common/kernel_abi.cuh"

namespace convjit_device {

// Taps t in [0, taps) with 0 <= o*stride - pad + t*dilation < in.  With
// the arguments constexpr, the compiler folds this away where it can
// prove every tap valid.
struct TapRange {
  int begin;
  int end;
};
__device__ __forceinline__ index_t floor_div(index_t a, index_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}
__device__ __forceinline__ TapRange valid_taps(index_t o, index_t in, index_t taps, index_t pad,
                                               index_t stride, index_t dilation) {
  const index_t start = o * stride - pad;
  index_t begin = -floor_div(start, dilation);
  index_t end = floor_div(in - 1 - start, dilation) + 1;
  if (begin < 0) begin = 0;
  if (end > taps) end = taps;
  if (end < begin) end = begin;
  return {static_cast<int>(begin), static_cast<int>(end)};
}

// Whether (d, h, w) lies inside a D x H x W volume.
__device__ __forceinline__ bool inside(index_t d, index_t h, index_t w, index_t D, index_t H,
                                       index_t W) {
  return d >= 0 && d < D && h >= 0 && h < H && w >= 0 && w < W;
}

}  // namespace convjit_device
