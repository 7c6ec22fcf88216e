// The filters copied into the workspace in the order in which a GEMM's B
// operand reads them along K, for filter layouts whose own order cannot
// be loaded in 16-byte chunks: LBANN's contiguous K C T R S filters under
// channels-last activations, above all, where the forward GEMM's k =
// (tap, channel) steps through w by T R S.  A first pass
// (convjit_kernel_prepare, one thread per weight) writes the copy; the
// GEMM then fills B by cp.async instead of gathering it element by
// element.  The host asks for the pass (Problem::PACKED) only where the
// copy can be loaded in chunks and w cannot (kernel_source.cpp).
//
// An Order names, for element i of the copy, the weight it holds, and
// the copy's runs: `run()` consecutive elements (a tap's channels, or a
// group's filters) that step through w by `run_stride()`.
#pragma once
#include "common/grid.cuh"
#include "common/vector_memory.cuh"

namespace convjit_device {

// A weight: filter f (of all K), channel c within its group, and its tap.
struct FilterElement {
  index_t f, c, t, r, s;
};

// Element i of a tap-major run of `per_tap` elements per tap, as (tap, within).
struct TapPosition {
  index_t t, r, s, within;
};
__device__ __forceinline__ TapPosition tap_position(index_t i, index_t per_tap) {
  typedef Problem P;
  const index_t tap = i / per_tap % (P::T * P::R * P::S);
  return {tap / (P::R * P::S), tap / P::S % P::R, tap % P::S, i % per_tap};
}

// fwd: [K][T R S][CG], so filter n's row of B is its K = T R S CG
// elements in k order (k = tap CG + c).
struct ForwardFilterOrder {
  __device__ __forceinline__ static FilterElement element(index_t i) {
    typedef Problem P;
    const TapPosition q = tap_position(i, P::CG);
    return {i / (P::T * P::R * P::S * P::CG), q.within, q.t, q.r, q.s};
  }
  __device__ __forceinline__ static index_t run() { return Problem::CG; }
  __device__ __forceinline__ static index_t run_stride() { return Problem::WS1; }
};

// bwddata: [G][CG][T R S][K/G], so channel c's row of B holds, per tap,
// the group's K/G filters contiguously (a phase's k = (tap, filter)).
struct BackwardDataFilterOrder {
  __device__ __forceinline__ static FilterElement element(index_t i) {
    typedef Problem P;
    const index_t per_group = P::K / P::G;
    const TapPosition q = tap_position(i, per_group);
    const index_t row = i / (P::T * P::R * P::S * per_group);  // group and channel
    return {row / P::CG * per_group + q.within, row % P::CG, q.t, q.r, q.s};
  }
  __device__ __forceinline__ static index_t run() { return Problem::K / Problem::G; }
  __device__ __forceinline__ static index_t run_stride() { return Problem::WS0; }
};

// Order with each filter's taps reversed: tap (t, r, s) of the copy holds
// tap (T-1-t, R-1-r, S-1-s) of w.  The Hopper conv computes a stride-1
// bwddata as the forward conv of dy with these (Problem::FLIP), its
// Problem's K and CG being the conv's C and K and WS0, WS1 swapped.
template <class Order>
struct FlippedTaps {
  __device__ __forceinline__ static FilterElement element(index_t i) {
    typedef Problem P;
    const FilterElement e = Order::element(i);
    return {e.f, e.c, P::T - 1 - e.t, P::R - 1 - e.r, P::S - 1 - e.s};
  }
  __device__ __forceinline__ static index_t run() { return Order::run(); }
  __device__ __forceinline__ static index_t run_stride() { return Order::run_stride(); }
};

__device__ __forceinline__ index_t weight_offset(const FilterElement& e) {
  typedef Problem P;
  return e.f * P::WS0 + e.c * P::WS1 + e.t * P::WS2 + e.r * P::WS3 + e.s * P::WS4;
}

// Copies every weight of w into `packed` in Order.  Reads gather through
// w's strides (the filters are small and stay in L2); writes coalesce.
// Where the runs are whole 16-byte chunks, a thread copies a chunk: its
// element's place in w found once, its loads all in flight, one store
// (the host launches a thread per chunk then: filter_copy.hpp).  Else a
// thread per element.
template <class Order>
__device__ __forceinline__ void pack_filters(const storage_t* __restrict__ w,
                                             storage_t* __restrict__ packed) {
  typedef Problem P;
  const index_t count = P::K * P::CG * P::T * P::R * P::S;
  if (Order::run() % kChunkElements == 0) {
    const index_t stride = Order::run_stride();
    // Rolled: a first pass is all memory, and a small loop compiles fast.
#pragma unroll 1
    for (index_t q = thread_index(); q < count / kChunkElements; q += thread_count()) {
      const index_t first = weight_offset(Order::element(q * kChunkElements));
      float v[kChunkElements];
#pragma unroll
      for (int j = 0; j < kChunkElements; ++j) v[j] = load(w[first + j * stride]);
      store_128(packed + q * kChunkElements, pack_chunk(v));
    }
    return;
  }
#pragma unroll 1
  for (index_t i = thread_index(); i < count; i += thread_count())
    packed[i] = store(load(w[weight_offset(Order::element(i))]));
}

}  // namespace convjit_device
