// The sum of one value per thread over a block, in a fixed order, so that
// reductions built on it are bit-reproducible: a butterfly within each
// warp, then the warps' sums in warp order.
#pragma once
#include "common/warp.cuh"

namespace convjit_device {

// Every thread of the block calls it (it holds barriers) and gets the sum.
// `scratch` holds a float per warp.
template <class Shared>
__device__ __forceinline__ float block_sum(float v, Shared& scratch) {
  for (unsigned offset = kWarpSize / 2; offset > 0; offset /= 2)
    v += __shfl_xor_sync(kFullMask, v, offset);
  if (lane_id() == 0) scratch[warp_id()] = v;
  __syncthreads();
  float total = 0.0f;
  for (unsigned w = 0; w < Problem::BLOCK / kWarpSize; ++w) total += scratch[w];
  __syncthreads();  // every thread has read scratch before a next call overwrites it
  return total;
}

}  // namespace convjit_device
