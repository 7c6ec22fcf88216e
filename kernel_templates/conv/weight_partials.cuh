// The second pass of a split bwdfilt reduction (conv/conv_bwdfilt.cuh,
// conv/depthwise_bwdfilt.cuh): the first wrote P::SPLIT partial sums per
// weight into the workspace, slice by slice, weight e = ((k CG + c) T +
// t) R S + r S + s within a slice; this adds each weight's in slice order,
// one thread per weight.  No atomics: results are bit-reproducible.
#pragma once
#include "common/epilogue.cuh"
#include "common/grid.cuh"

namespace convjit_device {

__device__ __forceinline__ index_t weight_count() {
  typedef Problem P;
  return P::K * P::CG * P::T * P::R * P::S;
}

__device__ __forceinline__ void finish_weight_partials(storage_t* __restrict__ dw, float alpha,
                                                       float beta,
                                                       const scratch_t* __restrict__ partial) {
  typedef Problem P;
  const index_t weights = weight_count();
  for (index_t e = thread_index(); e < weights; e += thread_count()) {
    float acc = 0.0f;
    for (index_t part = 0; part < P::SPLIT; ++part) acc += partial[part * weights + e];
    const index_t s = e % P::S, r = (e / P::S) % P::R, t = (e / (P::S * P::R)) % P::T;
    const index_t cw = (e / (P::S * P::R * P::T)) % P::CG, k = e / (P::S * P::R * P::T * P::CG);
    scale_store(dw + k * P::WS0 + cw * P::WS1 + t * P::WS2 + r * P::WS3 + s * P::WS4, acc, alpha,
                beta);
  }
}

}  // namespace convjit_device
