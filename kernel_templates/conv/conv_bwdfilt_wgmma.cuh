// Convolution backward filter for Hopper (sm_90a): the implicit GEMM of
// conv/conv_bwdfilt_gemm.cuh, dw[m, n] = sum_k A[m, k] B[n, k] over
// m = filters, n = (tap, channel), k = output pixels, with the operands
// brought in by TMA and multiplied by wgmma in the pipeline of
// conv/wgmma_pipeline.cuh.  A block computes a 128 x 128 tile of dw over
// a slice of the pixels:
//   - the producer, per K step of 64 output pixels: two im2col boxes of
//     dy (64 pixels x 64 filters each, a map over dy itself, map 1) and two
//     of x (64 pixels x 64 channels of one tap, the forward conv's window
//     with its padding zero-filled, map 0), all 128-byte swizzled;
//   - the consumer: per stage, four k16 slices of two m64n128 wgmmas
//     (filters 0-63 and 64-127; one where the tile has no filters past
//     its first 64, whose dy box is then not loaded either).  Both
//     operands are MN-major (their filters and channels run along the
//     boxes' rows, the pixels across them), so the wgmmas transpose them;
//   - the epilogue: with one slice (P::SPLIT = 1) each thread writes its
//     accumulators to dw, alpha/beta-blended, or where dw's channels lie
//     apart (scatters_dw) as one f32 partial sum; with more, as f32
//     partial sums to the workspace, and convjit_kernel_finish adds them
//     in slice order: the same sum on every run, no atomics.  Or, with
//     P::SUM_IN_CLUSTER (2 to 8), a tile's slices come in clusters of
//     that many blocks, which add theirs in the same order through
//     distributed shared memory, each block a share of the tile, and
//     store dw: no workspace, no second pass.  Where a tile has more
//     slices than a cluster, each cluster stores its sum as one partial
//     sum, which the second pass adds in cluster order.
// dw's columns come in blocks of 64 channels of one tap; a tile is two
// of them, so a tap's 64 channels or fewer share a tile with the next
// tap's.  Boxes past the last block load the last again (their columns
// are never stored); channels past CG are TMA's zero fill.
// Where it applies (dispatcher/backends/jit/wgmma_conv.hpp): as for the
// forward conv, with dy channels-last too; dw in any layout.
// Where the conv folds its horizontal taps into its channels (P::FOLD:
// a stem's 3 channels, dispatcher/backends/jit/tap_fold.hpp), the Problem
// is the folded conv's: convjit_kernel_prepare writes x' to the workspace
// (conv/folded_taps.cuh), map 0 reads it, the blocks compute dw' as
// partial sums even with one slice, and convjit_kernel_finish unfolds
// them into dw.
#include "common/cluster.cuh"
#include "common/epilogue.cuh"
#include "common/grid.cuh"
#include "common/tma.cuh"
#include "common/vector_memory.cuh"
#include "common/wgmma.cuh"
#include "conv/folded_taps.cuh"
#include "conv/im2col_loads.cuh"
#include "conv/wgmma_conv_shape.cuh"
#include "conv/wgmma_pipeline.cuh"

namespace convjit_device {
namespace conv_bwdfilt_wgmma {

typedef Problem P;
using namespace wgmma_pipeline;

constexpr int kBlockM = CONVJIT_WGMMA_FILTERS;
constexpr int kBox = CONVJIT_WGMMA_CHANNELS;  // filters or channels of a box
constexpr int kStepPixels = CONVJIT_WGMMA_STEP_PIXELS;
constexpr int kBlockN = 2 * kBox;
static_assert(kBlockM == 2 * kBox, "A's 128 filters are two boxes");
constexpr unsigned kBoxBytes = kStepPixels * kBox * 2;
constexpr unsigned kStageBytes = 4 * kBoxBytes;  // dy's two boxes, then x's two
constexpr unsigned kBoxFloats = kBoxBytes / 4;

__device__ __forceinline__ int channel_blocks() {
  return static_cast<int>((P::CG + kBox - 1) / kBox);
}
__device__ __forceinline__ int column_blocks() {
  return static_cast<int>(P::T * P::R * P::S) * channel_blocks();
}
__device__ __forceinline__ index_t pixels() { return P::N * P::OD * P::OH * P::OW; }

__device__ __forceinline__ bool sums_in_cluster() { return P::SUM_IN_CLUSTER != 0; }
// The slices a cluster adds (one without clusters).
__device__ __forceinline__ index_t cluster_slices() {
  return sums_in_cluster() ? P::SUM_IN_CLUSTER : 1;
}

// A block's work: its tile of dw and its slice of the K steps, split s
// taking steps [s steps / SPLIT, (s + 1) steps / SPLIT).  Blocks run the
// filters' tiles fastest, then the columns', then the slices, so that
// those reading the same pixels run together; but where clusters sum the
// slices, a cluster's blocks (neighbours in the grid) are neighbouring
// slices of one tile, and the clusters run the tiles fastest.
struct Work {
  int filter0, block0;  // the first filter; the first column block
  index_t split, first_step;
  int steps;
};
__device__ __forceinline__ Work work_of(index_t block) {
  const index_t tiles_m = (P::K + kBlockM - 1) / kBlockM;
  const index_t tiles = tiles_m * ((column_blocks() + 1) / 2);
  const index_t cluster = block / cluster_slices(), rank = block % cluster_slices();
  const index_t tile = cluster % tiles;
  const index_t split = cluster / tiles * cluster_slices() + rank;
  const index_t steps = (pixels() + kStepPixels - 1) / kStepPixels;
  const index_t first = split * steps / P::SPLIT, end = (split + 1) * steps / P::SPLIT;
  return {static_cast<int>(tile % tiles_m * kBlockM), static_cast<int>(tile / tiles_m * 2), split,
          first, static_cast<int>(end - first)};
}

// Column block j's tap and first channel; the last block for one past it.
struct Columns {
  FilterTap tap;
  int c0;
};
__device__ __forceinline__ Columns columns_of(int j) {
  const int block = j < column_blocks() ? j : column_blocks() - 1;
  return {filter_tap(block / channel_blocks()), block % channel_blocks() * kBox};
}

// Whether the tile has filters in its second 64: not where the conv has
// 64 or fewer (a stem's, most of YOLO11n's), whose blocks then neither
// load dy's second box nor multiply it (half the wgmmas, a quarter of the
// loads).  Uniform over the block, as wgmma needs.
__device__ __forceinline__ bool has_bottom(const Work& work) { return work.filter0 + kBox < P::K; }

// One K step's three or four boxes, each completing on `full`.
template <class Shared, class Barrier>
__device__ __forceinline__ void load_stage(const tensor_maps_t& maps, Shared stage, Barrier full,
                                           const Work& work, index_t step) {
  const index_t m = step * kStepPixels;
  const Anchor pixel = output_anchor(m), window = window_anchor(m);
  load_pixels(&stage[0], maps.map[1], full, work.filter0, pixel, FilterTap{0, 0, 0});
  if (has_bottom(work))
    load_pixels(&stage[kBoxFloats], maps.map[1], full, work.filter0 + kBox, pixel,
                FilterTap{0, 0, 0});
  for (int j = 0; j < 2; ++j) {
    const Columns cols = columns_of(work.block0 + j);
    load_pixels(&stage[(2 + j) * kBoxFloats], maps.map[0], full, cols.c0, window, cols.tap);
  }
}

template <class Tiles, class Ring>
__device__ __forceinline__ void produce(const tensor_maps_t& maps, Tiles tiles, const Ring& ring,
                                        const Work& work) {
  const unsigned loaded = has_bottom(work) ? kStageBytes : kStageBytes - kBoxBytes;
  produce_steps(ring, work.steps, kStageBytes, loaded, [&](int i, unsigned at) {
    load_stage(maps, &tiles[at], ring.full_barrier(i), work, work.first_step + i);
  });
}

// Per stage, 4 k16 slices of 16 pixels: two 8-row groups further along
// each box.  In the MN-major layout a box row holds 64 filters or
// channels (the leading offset steps to x's second box, which follows
// the first; A's 64 rows are one box) and 8 pixels' rows are 1024 bytes.
template <class Tiles, class Ring>
__device__ __forceinline__ void consume(Tiles tiles, const Ring& ring, const Work& work,
                                        wgmma_accumulators<kBlockN>& top,
                                        wgmma_accumulators<kBlockN>& bottom) {
  const auto box = [&](unsigned at) {
    return wgmma_descriptor(&tiles[at], kBoxBytes, kSwizzleRowGroup, wgmma_swizzle_128);
  };
  const bool second = has_bottom(work);
  consume_steps(ring, work.steps, kStageBytes / 4, top, bottom, [&](unsigned at, bool accumulated) {
    const unsigned long long a0 = box(at), a1 = box(at + kBoxFloats),
                             b = box(at + 2 * kBoxFloats);
    for (int slice = 0; slice < kStepPixels / 16; ++slice) {
      const unsigned long long offset =
          static_cast<unsigned long long>(slice) * 2 * kSwizzleRowGroup >> 4;
      const bool accumulate = accumulated || slice > 0;
      wgmma_ss<kBlockN, Operand, 1, 1>(top, a0 + offset, b + offset, accumulate);
      if (second) wgmma_ss<kBlockN, Operand, 1, 1>(bottom, a1 + offset, b + offset, accumulate);
    }
  });
}

// The weights of one split's partial sums, each (filter, tap, channel).
__device__ __forceinline__ index_t weight_count() {
  return P::K * P::T * P::R * P::S * P::CG;
}
// Whether dw's channels lie apart (K C R S with more than one tap: a 3 x
// 3's 9 weights apart).  A tile's threads would then store it 2 bytes a
// lane and a sector each, 32 sectors a warp's store, and a tile holds
// only one or two of the taps that would fill those sectors.  So a tile's
// block stores an f32 partial sum, 8 sectors a warp's store, and the
// second pass writes dw along its taps (wgmma_conv.cpp's scatters_dw).
__device__ __forceinline__ bool scatters_dw() { return P::WS1 != 1 && P::CG > 1; }
// Whether the blocks (their clusters) write partial sums, which the
// second pass adds (and for a fold, unfolds; for scattered dw, lays out
// along its taps), rather than dw itself: the host's choice
// (WgmmaConvLaunch::partial_sums), their count.
__device__ __forceinline__ bool writes_partial_sums() { return P::PARTIAL_SUMS != 0; }
__device__ __forceinline__ scratch_t* partial_sums(scratch_t* workspace) {
  return workspace + P::PARTIALS;
}
__device__ __forceinline__ index_t dw_offset(index_t f, const FilterTap& tap, index_t c) {
  return f * P::WS0 + c * P::WS1 + tap.t * P::WS2 + tap.r * P::WS3 + tap.s * P::WS4;
}
// Weight (f, column block j's tap, c) of partial sum k (a slice's or a
// cluster's), in (filter, tap, channel) order.
__device__ __forceinline__ index_t partial_offset(index_t k, index_t f, int j, index_t c) {
  return k * weight_count() + (f * P::T * P::R * P::S + j / channel_blocks()) * P::CG + c;
}

// A half's accumulators (filters row0 to row0 + 63 of the tile) to dw, or
// to its split's partial sums.  Accumulator i is the thread's origin
// plus accumulator_step(i): 8 h rows and 8 (i / 4) + e columns further,
// for i = 32 block + 4 g + 2 h + e, that is column block `block`, channel
// 8 g + e past the origin's.  So each of a thread's two rows and two
// column blocks gives one base offset, and its elements are constant
// steps from it, in pairs of adjacent channels: one 8-byte store of
// partial sums (the channels a group are a multiple of 8, so the pair is
// whole and aligned).  Placed one at a time, the 64 elements' taps and
// offsets took NVVM up to a fifth of the kernel's time, and twice the stores.
__device__ __forceinline__ void store_half(wgmma_accumulators<kBlockN>& acc, const Work& work,
                                           int row0, storage_t* dw, scratch_t* partial,
                                           float alpha, float beta) {
  const AccumulatorPlace origin = accumulator_origin();
#pragma unroll
  for (int block = 0; block < 2; ++block) {
    const int j = work.block0 + block;
    if (j >= column_blocks()) continue;
    const Columns cols = columns_of(j);
    const index_t c = cols.c0 + origin.col;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const index_t f = work.filter0 + row0 + origin.row + 8 * h;
      if (f >= P::K) continue;
      const index_t base =
          !writes_partial_sums() ? dw_offset(f, cols.tap, c) : partial_offset(work.split, f, j, c);
#pragma unroll
      for (int g = 0; g < kBox / 8; ++g) {
        // Channels a whole number of blocks: every block's are in range.
        if (P::CG % kBox != 0 && c + 8 * g >= P::CG) continue;
        const int i = 32 * block + 4 * g + 2 * h;
        if (!writes_partial_sums()) {
          scale_store(dw + base + 8 * g * P::WS1, acc[i], alpha, beta);
          scale_store(dw + base + (8 * g + 1) * P::WS1, acc[i + 1], alpha, beta);
        } else {
          store_global_64(partial + base + 8 * g,
                          Vec64{{__float_as_uint(acc[i]), __float_as_uint(acc[i + 1])}});
        }
      }
    }
  }
}

// The slices' sums in their cluster (P::SUM_IN_CLUSTER; the block's rank
// is its slice).  Each consumer thread stages its accumulators in its
// block's ring, which the main loop is done with, in pairs: pair q (the
// top half's 32, then the bottom's) of thread t at pair q x 128 + t, so
// that a warp's 32 pairs are 256 contiguous bytes.  Once the cluster has
// met, the block whose rank is q % SUM_IN_CLUSTER adds pair q of every
// slice in slice order (with one cluster a tile the second pass's sum:
// the same bits), reading the other blocks' rings through distributed
// shared memory, and stores it to dw, or as the cluster's partial sum.  The
// cluster meets again before any block returns, which would free the
// shared memory the others read.
constexpr int kHalfPairs = kBlockN / 4;  // a half's accumulators, in pairs
constexpr int kPairs = 2 * kHalfPairs;
__device__ __forceinline__ int staged_pair(int q) {
  return 2 * (q * static_cast<int>(kWarpgroupSize) + tile_thread());
}
template <class Tiles>
__device__ __forceinline__ void stage_pairs(Tiles tiles, wgmma_accumulators<kBlockN>& acc,
                                            int pair0) {
#pragma unroll
  for (int q = 0; q < kHalfPairs; ++q)
    store_shared_64(tiles, staged_pair(pair0 + q),
                    Vec64{{__float_as_uint(acc[2 * q]), __float_as_uint(acc[2 * q + 1])}});
}

// Pair q's two weights, from the thread's accumulator place: its half,
// then i = 32 block + 4 g + 2 h within it (store_half's terms), to dw or
// to the cluster's partial sums.  None where they fall past K or CG, or
// in no column block.
__device__ __forceinline__ void store_pair(const Work& work, int q, float sum0, float sum1,
                                           storage_t* dw, scratch_t* partial, float alpha,
                                           float beta) {
  const AccumulatorPlace origin = accumulator_origin();
  const int i = 2 * (q % kHalfPairs), block = i / 32, g = i % 32 / 4, h = i % 4 / 2;
  const int j = work.block0 + block;
  if (j >= column_blocks()) return;
  const Columns cols = columns_of(j);
  const index_t c = cols.c0 + origin.col + 8 * g;
  const index_t f = work.filter0 + q / kHalfPairs * kBox + origin.row + 8 * h;
  if (f >= P::K || c >= P::CG) return;
  if (writes_partial_sums()) {
    store_global_64(partial + partial_offset(work.split / cluster_slices(), f, j, c),
                    Vec64{{__float_as_uint(sum0), __float_as_uint(sum1)}});
    return;
  }
  const index_t at = dw_offset(f, cols.tap, c);
  scale_store(dw + at, sum0, alpha, beta);
  scale_store(dw + at + P::WS1, sum1, alpha, beta);
}

// The block's share: pairs rank, rank + SUM_IN_CLUSTER, ..., in batches
// whose loads (16: the slices of 16 / SUM_IN_CLUSTER pairs) are all issued before the
// first is added, so that the cluster's latency is paid once a batch, not
// once a load.
template <class Tiles>
__device__ __forceinline__ void sum_in_cluster(Tiles tiles, const Work& work, storage_t* dw,
                                               scratch_t* partial, float alpha, float beta) {
  constexpr int kInFlight = 16;
  static_assert(kInFlight % CONVJIT_WGMMA_CLUSTER_SLICES == 0, "whole pairs a batch");
  const int rank = static_cast<int>(cluster_rank()), slices = static_cast<int>(cluster_slices());
  const int pairs = has_bottom(work) ? kPairs : kHalfPairs, batch = kInFlight / slices;
#pragma unroll 1
  for (int q0 = rank; q0 < pairs; q0 += batch * slices) {
    Vec64 v[kInFlight];
#pragma unroll
    for (int k = 0; k < kInFlight; ++k) {
      const int q = q0 + k / slices * slices;
      if (k < batch * slices && q < pairs)
        v[k] = load_cluster_64(&tiles[staged_pair(q)], static_cast<unsigned>(k % slices));
    }
#pragma unroll
    for (int n = 0; n < kInFlight; ++n) {
      const int q = q0 + n * slices;
      if (n >= batch || q >= pairs) break;
      float sum0 = 0.0f, sum1 = 0.0f;
#pragma unroll
      for (int s = 0; s < CONVJIT_WGMMA_CLUSTER_SLICES; ++s) {
        if (s >= slices) break;
        sum0 += __uint_as_float(v[n * slices + s].w[0]);
        sum1 += __uint_as_float(v[n * slices + s].w[1]);
      }
      store_pair(work, q, sum0, sum1, dw, partial, alpha, beta);
    }
  }
}

}  // namespace conv_bwdfilt_wgmma
}  // namespace convjit_device

CONVJIT_KERNEL_BOUNDED(CONVJIT_WGMMA_BLOCK_THREADS(Problem::CONSUMERS), Problem::BLOCKS_PER_SM)
convjit_kernel(const convjit_device::storage_t* /*x*/, const convjit_device::storage_t* /*dy*/,
               convjit_device::storage_t* dw, float alpha, float beta,
               convjit_device::scratch_t* workspace,
               const convjit_device::storage_t* /*bias*/,
               const convjit_device::storage_t* /*residual*/,
               const CONVJIT_GRID_CONSTANT convjit_device::tensor_maps_t maps) {
  using namespace convjit_device;
  using namespace convjit_device::conv_bwdfilt_wgmma;
  CONVJIT_DYNAMIC_SHARED_ARRAY(float, smem);
  CONVJIT_SHARED_ARRAY(mbarrier_t, full, kMaxStages);
  CONVJIT_SHARED_ARRAY(mbarrier_t, empty, kMaxStages);
  // The consumer's threads, once its wgmmas are done, where a cluster sums
  // the slices (their staging overwrites the ring).
  CONVJIT_SHARED_ARRAY(mbarrier_t, consumers, 1);
  const auto stages = ring(full, empty);
  const Work work = work_of(static_cast<index_t>(blockIdx.x));
  // The cluster's two meetings (sum_in_cluster), which the producer's
  // threads attend too.
  const auto meet_twice = [] {
    CONVJIT_IF_CONSTANT (Problem::SUM_IN_CLUSTER != 0) {
      cluster_sync();
      cluster_sync();
    }
  };
  run_warpgroups(
      stages, consumers, [&] { produce(maps, smem, stages, work); },
      [&] {
        wgmma_accumulators<kBlockN> top, bottom;
        consume(smem, stages, work, top, bottom);
        CONVJIT_IF_CONSTANT (Problem::SUM_IN_CLUSTER != 0) {
          // Every warp's wgmmas are done with the ring before a thread
          // stages over it.
          mbarrier_arrive(epilogue_barrier(consumers));
          mbarrier_wait_parity(epilogue_barrier(consumers), 0);
          stage_pairs(smem, top, 0);
          if (has_bottom(work)) stage_pairs(smem, bottom, kHalfPairs);
          cluster_sync();
          sum_in_cluster(smem, work, dw, partial_sums(workspace), alpha, beta);
          cluster_sync();
          return;
        }
        scratch_t* partial = partial_sums(workspace);
        store_half(top, work, 0, dw, partial, alpha, beta);
        store_half(bottom, work, 64, dw, partial, alpha, beta);
      },
      meet_twice);
}

// Where the conv folds its taps: x' (conv/folded_taps.cuh), which map 0
// reads.
CONVJIT_KERNEL convjit_kernel_prepare(const convjit_device::storage_t* __restrict__ x,
                                      const convjit_device::storage_t* /*dy*/,
                                      convjit_device::storage_t* /*dw*/, float /*alpha*/,
                                      float /*beta*/, convjit_device::scratch_t* workspace) {
  using namespace convjit_device;
  CONVJIT_IF_CONSTANT (Problem::FOLD != 0) fold_x(x, workspace_storage(workspace));
}

// The second pass of a split reduction: each weight's partial sums (a
// slice's, or a cluster's) added in order, by a wave of threads looping
// over the weights; where the conv folds its taps, each weight of dw'
// stored at its place in dw (none for the zero fill).  The threads take
// the weights in the partial sums' order, (filter, tap, channel), but in
// dw's, (filter, channel, tap), where dw's channels lie apart: a warp's
// stores are then contiguous, and its loads, a few channels of each tap,
// take sectors its block's other warps read too.
CONVJIT_KERNEL convjit_kernel_finish(const convjit_device::storage_t* /*x*/,
                                     const convjit_device::storage_t* /*dy*/,
                                     convjit_device::storage_t* __restrict__ dw, float alpha,
                                     float beta,
                                     convjit_device::scratch_t* __restrict__ workspace) {
  using namespace convjit_device;
  using namespace convjit_device::conv_bwdfilt_wgmma;
  const scratch_t* partial = partial_sums(workspace);
  const index_t weights = weight_count();
  const index_t taps = P::T * P::R * P::S;
  const bool along_taps = scatters_dw() && P::FOLD == 0;
  for (index_t e = thread_index(); e < weights; e += thread_count()) {
    const index_t f = e / (P::CG * taps);
    const index_t c = along_taps ? e / taps % P::CG : e % P::CG;
    const index_t tap = along_taps ? e % taps : e / P::CG % taps;
    const FilterTap at = filter_tap(static_cast<int>(tap));
    const index_t to =
        P::FOLD != 0 ? folded_taps::folded_weight(f, at.t, at.r, c) : dw_offset(f, at, c);
    if (to < 0) continue;
    const index_t from = (f * taps + tap) * P::CG + c;
    float acc = 0.0f;
    for (index_t k = 0; k < P::PARTIAL_SUMS; ++k) acc += partial[k * weights + from];
    scale_store(dw + to, acc, alpha, beta);
  }
}
