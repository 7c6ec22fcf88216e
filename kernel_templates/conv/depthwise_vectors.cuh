// What the depthwise kernels share beyond their channel vectors
// (common/channel_vectors.cuh): the strip of pixels a thread owns, and
// the weights of one tap.
#pragma once
#include "common/channel_vectors.cuh"
#include "conv/depthwise_shape.cuh"

namespace convjit_device {

constexpr int kDepthwiseStrip = CONVJIT_DEPTHWISE_STRIP;

// The filters' weights at one tap for filters k0, k0 + step, ...: zero
// past the last.  Scalar: a depthwise filter is one tap wide in every
// common layout, and the weights stay in L1.
__device__ __forceinline__ void read_taps(const storage_t* w, index_t k0, index_t step,
                                          index_t tap_offset, float (&v)[kChunkElements]) {
#pragma unroll
  for (int j = 0; j < kChunkElements; ++j) {
    const index_t k = k0 + j * step;
    v[j] = k < Problem::K ? load(w[k * Problem::WS0 + tap_offset]) : 0.0f;
  }
}

}  // namespace convjit_device
