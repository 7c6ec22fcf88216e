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
// group's filters) that step through w by `run_stride()`.  The copy is
// [rows()][T R S][run()]; where `tiled()`, each row steps through w by
// `row_stride()`, and `kFlipped` reads each row's taps reversed.
#pragma once
#include "common/grid.cuh"
#include "common/vector_memory.cuh"
#include "conv/filter_tile_shape.cuh"

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
  __device__ __forceinline__ static index_t rows() { return Problem::K; }
  __device__ __forceinline__ static index_t row_stride() { return Problem::WS0; }
  __device__ __forceinline__ static bool tiled() { return true; }
  static constexpr bool kFlipped = false;
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
  // A row is a channel of one group: with more, its filters start at the
  // group's, which no one stride reaches.
  __device__ __forceinline__ static index_t rows() { return Problem::G * Problem::CG; }
  __device__ __forceinline__ static index_t row_stride() { return Problem::WS1; }
  __device__ __forceinline__ static bool tiled() { return Problem::G == 1; }
  static constexpr bool kFlipped = false;
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
  __device__ __forceinline__ static index_t rows() { return Order::rows(); }
  __device__ __forceinline__ static index_t row_stride() { return Order::row_stride(); }
  __device__ __forceinline__ static bool tiled() { return Order::tiled(); }
  static constexpr bool kFlipped = !Order::kFlipped;
};

__device__ __forceinline__ index_t weight_offset(const FilterElement& e) {
  typedef Problem P;
  return e.f * P::WS0 + e.c * P::WS1 + e.t * P::WS2 + e.r * P::WS3 + e.s * P::WS4;
}

// Where w's taps are contiguous (K C T R S: LBANN's and PyTorch's default
// filters) and a row's or a run element's step through w is one filter's
// taps, every (row, run element) is a run of contiguous weights, and a
// tile of them a few long runs: a block copies its tile (filter_tile_shape.cuh),
// all taps, into shared memory as w holds it, then writes the copy's
// chunks from there.  Both sides coalesce, where the gathering copy below
// reads each sector of w again for every tap (9x the L2's sectors for a
// 3 x 3: the analyser's count).  The host launches a block a tile then
// (filter_copy.cpp, whose conditions these are).
__device__ __forceinline__ index_t filter_taps() { return Problem::T * Problem::R * Problem::S; }
__device__ __forceinline__ bool taps_contiguous() {
  typedef Problem P;
  return (P::S == 1 || P::WS4 == 1) && (P::R == 1 || P::WS3 == P::S) &&
         (P::T == 1 || P::WS2 == P::R * P::S);
}
template <class Order>
__device__ __forceinline__ bool copies_tiles() {
  const index_t taps = filter_taps();
  return sizeof(storage_t) <= 4 && Order::tiled() && taps_contiguous() &&
         Order::run() % kChunkElements == 0 && taps <= CONVJIT_FILTER_TILE_MAX_TAPS &&
         (Order::row_stride() == taps || Order::run_stride() == taps);
}

// A tile's shape in shared memory: `outer` runs of `length` weights (w's
// contiguous taps of `inner` rows or run elements), back to back, of
// which the first `valid_outer` and the first `valid_length` weights of
// each exist.  The loops below walk the whole tile and skip the rest:
// every divisor is then a constant of the Problem, where the valid
// extents' 64-bit divisions took most of the kernel's instructions.
struct FilterTile {
  unsigned outer, length, valid_outer, valid_length;
};

// The tile from w's runs, `stride` apart from `first`, in f32: in
// 16-byte chunks where they are whole and aligned, each stored as two
// 16-byte halves (a quarter-warp's in two phases, where eight 4-byte
// stores a lane would take eight).
template <class Tile>
__device__ __forceinline__ void load_filter_tile(const storage_t* first, index_t stride,
                                                 const FilterTile& t, Tile tile) {
  if (t.valid_length % kChunkElements == 0 && stride % kChunkElements == 0 &&
      chunk_aligned(first)) {
    const unsigned chunks = t.length / kChunkElements;
#pragma unroll 1
    for (unsigned q = threadIdx.x; q < t.outer * chunks; q += blockDim.x) {
      const unsigned o = q / chunks, at = q % chunks * kChunkElements;
      if (o >= t.valid_outer || at >= t.valid_length) continue;
      float v[kChunkElements];
      unpack_chunk(load_128(first + o * stride + at), v);
#pragma unroll
      for (int j = 0; j < kChunkElements; j += 4)
        store_128(&tile[o * t.length + at + j],
                  Vec128{{__float_as_uint(v[j]), __float_as_uint(v[j + 1]),
                          __float_as_uint(v[j + 2]), __float_as_uint(v[j + 3])}});
    }
    return;
  }
#pragma unroll 1
  for (unsigned i = threadIdx.x; i < t.outer * t.length; i += blockDim.x) {
    const unsigned o = i / t.length, at = i % t.length;
    if (o < t.valid_outer && at < t.valid_length) tile[i] = load(first[o * stride + at]);
  }
}

// Block b's tile: rows from row0 by run elements from e0, all taps.
template <class Order, class Tile>
__device__ __forceinline__ void copy_filter_tile(const storage_t* __restrict__ w,
                                                 storage_t* __restrict__ packed, Tile tile) {
  const unsigned taps = static_cast<unsigned>(filter_taps());
  // w's runs: the rows' taps (the backward-data order's channels) or the
  // run elements' (the forward order's), one run per element of the other.
  const bool rows_inner = Order::row_stride() == taps;
  const bool wide = CONVJIT_FILTER_TILE_WIDE(Order::rows() * Order::run());
  const unsigned tile_rows = CONVJIT_FILTER_TILE_ROWS(rows_inner, wide);
  const unsigned tile_run = CONVJIT_FILTER_TILE_RUN(rows_inner, wide);
  const index_t run_tiles = (Order::run() + tile_run - 1) / tile_run;
  const index_t row0 = blockIdx.x / run_tiles * tile_rows, e0 = blockIdx.x % run_tiles * tile_run;
  if (row0 >= Order::rows()) return;  // a grid beyond the tiles (the whole block)
  const unsigned rows =
      static_cast<unsigned>(Order::rows() - row0 < tile_rows ? Order::rows() - row0 : tile_rows);
  const unsigned run =
      static_cast<unsigned>(Order::run() - e0 < tile_run ? Order::run() - e0 : tile_run);
  const FilterTile t = rows_inner ? FilterTile{tile_run, tile_rows * taps, run, rows * taps}
                                  : FilterTile{tile_rows, tile_run * taps, rows, run * taps};
  load_filter_tile(w + row0 * Order::row_stride() + e0 * Order::run_stride(),
                   rows_inner ? Order::run_stride() : Order::row_stride(), t, tile);
  __syncthreads();
  const unsigned row_step = rows_inner ? taps : t.length;
  const unsigned element_step = rows_inner ? t.length : taps;
  const unsigned chunks = tile_run / kChunkElements;  // a tap's, in a row
#pragma unroll 1
  for (unsigned q = threadIdx.x; q < tile_rows * taps * chunks; q += blockDim.x) {
    const unsigned c = q % chunks * kChunkElements, p = q / chunks % taps;
    const unsigned r = q / (chunks * taps);
    if (r >= rows || c >= run) continue;
    const unsigned at = r * row_step + c * element_step + (Order::kFlipped ? taps - 1 - p : p);
    float v[kChunkElements];
#pragma unroll
    for (int j = 0; j < kChunkElements; ++j) v[j] = tile[at + j * element_step];
    store_128(packed + ((row0 + r) * taps + p) * Order::run() + e0 + c, pack_chunk(v));
  }
}

// Copies every weight of w into `packed` in Order: by tiles where it can
// (above), else gathering through w's strides (the filters are small and
// stay in L2) with coalesced writes.  Where the runs are whole 16-byte
// chunks, a thread copies a chunk: its element's place in w found once,
// its loads all in flight, one store (the host launches a thread per
// chunk then: filter_copy.cpp).  Else a thread per element.
template <class Order>
__device__ __forceinline__ void pack_filters(const storage_t* __restrict__ w,
                                             storage_t* __restrict__ packed) {
  typedef Problem P;
  // Not launched (the host's Problem::PACKED): compiled to nothing, which
  // keeps the copy out of every module's NVRTC time.
  if (!P::PACKED) return;
  if (copies_tiles<Order>()) {
    CONVJIT_SHARED_ARRAY(float, tile, CONVJIT_FILTER_TILE_FLOATS(P::T * P::R * P::S));
    copy_filter_tile<Order>(w, packed, tile);
    return;
  }
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
