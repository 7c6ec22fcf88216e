// A conv fwd's epilogue, fused into the store of its result:
//   y = act(alpha * acc + bias[k] [+ residual]) + beta * y
// with the activation, the bias and the residual fixed by the prelude
// (Problem::ACT: 0 identity, 1 relu, 2 silu, 3 sigmoid; Problem::BIAS and
// Problem::RESIDUAL: 0 or 1).  The residual has y's strides, so it is read
// at y's offsets.  The host's reference is reference/epilogue_reference.hpp.
#pragma once
#include "common/channel_vectors.cuh"
#include "common/epilogue.cuh"

namespace convjit_device {

// relu keeps NaN (v < 0 is false for it), as PyTorch's does.
__device__ __forceinline__ float activate(long long act, float v) {
  if (act == 1) return v < 0.0f ? 0.0f : v;
  if (act == 2) return v / (1.0f + expf(-v));
  if (act == 3) return 1.0f / (1.0f + expf(-v));
  return v;
}

template <class P>
struct FusedEpilogue {
  float alpha, beta;
  const storage_t* bias;      // K elements, when P::BIAS
  const storage_t* residual;  // y's strides, when P::RESIDUAL

  // act(alpha * acc + bias + residual) for output offset `at` of filter k:
  // everything but beta's blend.
  __device__ __forceinline__ float value(float acc, index_t at, index_t k) const {
    float v = alpha * acc;
    if (P::BIAS) v += load(bias[k]);
    if (P::RESIDUAL) v += load(residual[at]);
    return activate(P::ACT, v);
  }

  // One element of y; y is not read when beta == 0.
  __device__ __forceinline__ void write(storage_t* y, index_t at, index_t k, float acc) const {
    float v = value(acc, at, k);
    if (beta != 0.0f) v += beta * load(y[at]);
    y[at] = store(v);
  }

  // Filters k0 ... of one pixel (`pixel`: its offset in y, channel k at
  // k * stride), `count` filters in all: acc becomes value(), ready for
  // write_channels with alpha 1.  Bias and residual move as 16-byte loads
  // where y does (`vector`) and their pointers allow it.
  __device__ __forceinline__ void apply(float (&acc)[kChunkElements], index_t pixel, index_t k0,
                                        index_t count, index_t stride, bool vector) const {
    float b[kChunkElements] = {}, r[kChunkElements] = {};
    if (P::BIAS) read_channels(bias, 0, k0, count, 1, vector && chunk_aligned(bias), b);
    if (P::RESIDUAL)
      read_channels(residual, pixel, k0, count, stride, vector && chunk_aligned(residual), r);
#pragma unroll
    for (int j = 0; j < kChunkElements; ++j)
      acc[j] = activate(P::ACT, alpha * acc[j] + b[j] + r[j]);
  }
};

}  // namespace convjit_device
