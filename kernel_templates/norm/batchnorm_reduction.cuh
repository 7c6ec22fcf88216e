// The batchnorm's per-channel sums (two of them: the forward's shifted
// values and squares, the backward's g and g xhat), in two levels with a
// fixed order, so that every run gives the same bits and no atomics are
// needed.  Level one (convjit_kernel_prepare) sums slices of each
// channel's values into the workspace (partial_at), P::SPLIT slices; level
// two (convjit_kernel_finish), a block per channel, adds the slices.
// Threads and warps are added in order (common/block_sum.cuh).
//
// Level one comes in two mappings:
//   planes   a block per channel and slice, its threads striding over the
//            slice's pixels: coalesced where a channel's pixels are
//            contiguous (NCHW and its kin);
//   vectors  a block per slice, each thread a vector of channels
//            (common/channel_vectors.cuh) at every rows-th pixel, its rows
//            then added in shared memory: coalesced where a pixel's
//            channels are contiguous (channels-last).  It needs the
//            channel vectors to fit a block.
#pragma once
#include "common/channel_vectors.cuh"
#include "norm/batchnorm_common.cuh"

namespace convjit_device {
namespace batchnorm {

// `terms_of(c)` gives channel c's terms: terms(q, a, b) adds its two
// terms at pixel q to a and b.
template <class TermsOf>
__device__ __forceinline__ void sum_planes(const TermsOf& terms_of, scratch_t* workspace) {
  CONVJIT_SHARED_ARRAY(float, warp_sums, P::BLOCK / kWarpSize);
  // The launch has exactly C x SPLIT blocks.
  const index_t c = blockIdx.x % P::C, part = blockIdx.x / P::C;
  const Slice slice = slice_of(part);
  const auto terms = terms_of(c);
  float a = 0.0f, b = 0.0f;
  for (index_t q = slice.first + threadIdx.x; q < slice.last; q += P::BLOCK) terms(q, a, b);
  a = block_sum(a, warp_sums);
  b = block_sum(b, warp_sums);
  if (threadIdx.x == 0) {
    workspace[partial_at(part, c)] = a;
    workspace[partial_at(part, c) + 1] = b;
  }
}

// The pixels one vector of channels is summed over in a block.
__device__ __forceinline__ index_t vector_rows() { return P::BLOCK / vector_count(P::C); }

// `terms_of(c0)` gives the terms of channels c0 ...: terms(q, a, b) adds
// channel c0 + j's at pixel q to a[j] and b[j].
template <class TermsOf>
__device__ __forceinline__ void sum_vectors(const TermsOf& terms_of, scratch_t* workspace) {
  // Sum k of channel j of thread t at (j * 2 + k) * BLOCK + t: a warp's
  // stores and loads fall in distinct banks.
  CONVJIT_SHARED_ARRAY(float, rows_sums, kChunkElements * 2 * P::BLOCK);
  const index_t vectors = vector_count(P::C), rows = vector_rows();
  const index_t v = threadIdx.x % vectors, row = threadIdx.x / vectors;
  const index_t part = blockIdx.x;  // the launch has exactly SPLIT blocks
  const Slice slice = slice_of(part);
  float a[kChunkElements] = {}, b[kChunkElements] = {};
  if (row < rows) {
    const auto terms = terms_of(v * kChunkElements);
    for (index_t q = slice.first + row; q < slice.last; q += rows) terms(q, a, b);
#pragma unroll
    for (int j = 0; j < kChunkElements; ++j) {
      rows_sums[(j * 2) * P::BLOCK + threadIdx.x] = a[j];
      rows_sums[(j * 2 + 1) * P::BLOCK + threadIdx.x] = b[j];
    }
  }
  __syncthreads();
  if (row != 0) return;
#pragma unroll
  for (int j = 0; j < kChunkElements; ++j) {
    const index_t c = v * kChunkElements + j;
    if (c >= P::C) continue;
    float ta = 0.0f, tb = 0.0f;
    for (index_t r = 0; r < rows; ++r) {
      ta += rows_sums[(j * 2) * P::BLOCK + r * vectors + v];
      tb += rows_sums[(j * 2 + 1) * P::BLOCK + r * vectors + v];
    }
    workspace[partial_at(part, c)] = ta;
    workspace[partial_at(part, c) + 1] = tb;
  }
}

// Level two: channel blockIdx.x's two totals, in every thread of its block.
struct Totals {
  float a, b;
};
__device__ __forceinline__ Totals channel_totals(const scratch_t* workspace) {
  CONVJIT_SHARED_ARRAY(float, warp_sums, P::BLOCK / kWarpSize);
  const index_t c = blockIdx.x;  // the launch has exactly C blocks
  float a = 0.0f, b = 0.0f;
  for (index_t part = threadIdx.x; part < P::SPLIT; part += P::BLOCK) {
    a += workspace[partial_at(part, c)];
    b += workspace[partial_at(part, c) + 1];
  }
  return {block_sum(a, warp_sums), block_sum(b, warp_sums)};
}

}  // namespace batchnorm
}  // namespace convjit_device
