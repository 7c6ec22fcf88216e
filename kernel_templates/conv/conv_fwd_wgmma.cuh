// Convolution forward for Hopper (sm_90a): the implicit GEMM of
// conv/conv_fwd_gemm.cuh, y[m, n] = sum_k A[m, k] B[n, k] over
// m = output pixels, n = filters, k = taps x channels, with the operands
// brought in by TMA and multiplied by wgmma in the warp-specialised
// pipeline of conv/wgmma_pipeline.cuh.  A block computes a tile of y of
// 128 or 256 pixels by Problem::TILE_N filters (256, 128, 64 or 32), N
// = 128 or fewer a consumer warpgroup (conv/wgmma_conv_tile.cuh):
//   - the producer, per K step of 64 channels of one tap (P::STEP: 32 or
//     16 where the conv has no more): an im2col load of A (the tile's
//     pixels x the step's channels, x's padding zero-filled by TMA,
//     tensor map 0, whose box the host makes that many pixels) and a tile
//     load of B (N filters x the same channels of that tap, tensor map 1,
//     whose box the host makes the tile's rows), both swizzled by their rows'
//     bytes;
//   - the consumers and the epilogue of conv/wgmma_conv_tile.cuh: two
//     m64nN wgmmas per 16 channels each, then the tile through shared
//     memory to y, alpha/beta-blended, in 16-byte chunks of 8 filters
//     where y's filters are contiguous; or, where y's pixels are rows of
//     one stride (P::TMA_STORE, a kernel for launches of beta 0), in
//     boxes stored by TMA through tensor map 2, which the host makes over
//     y (with row taps, pieces of 8 pixels of a row).
// With row taps (P::ROW_TAPS = S, the `r` variants: stride 1 along W),
// a K step is a window row's S taps of 64 channels: the tile's anchors
// run over output rows widened by the window's reach (anchor_row), each
// consumer's box of A is its 128 anchors plus the reach at the row's
// first tap, and B is a box of filters a tap; the consumer reads tap s
// from its box s DW rows down.  The im2col rows come through the L2
// once a window row instead of once a tap.
// In ping-pong (P::PINGPONG) the grid is persistent, at most a block an
// SM, and a block's two consumers take its tiles (blockIdx.x + j
// gridDim.x) in turn, a tile of 128 pixels each.  In clusters of
// P::CLUSTER blocks (ping-pong only), the cluster's blocks take
// neighbouring pixel tiles of one filter tile at once, and its first
// block's producer loads their shared B into all of them (TMA multicast):
// the L2 serves each stage's filters once for every block of the cluster.
// Or, with P::CLUSTER_PIXELS (the host makes the filter tiles whole
// clusters), they take neighbouring filter tiles of one pixel tile, and
// the first block's producer loads their shared A into all: the L2 serves
// each stage's im2col rows once a cluster, where a conv of many filter
// tiles would read them once a tile.
// With Stream-K (P::STREAM_K blocks, ping-pong; CONVJIT_WGMMA_STREAM_K=1)
// the blocks share all the tiles' K steps evenly instead, a tile's parts
// added by the last of its blocks to finish (conv/wgmma_conv_tile.cuh).
// Where the tiles would leave most of the GPU idle (few pixels, a long
// K), P::SPLIT blocks share a tile, each over a slice of its K steps
// (split-K): they write f32 partial sums to the workspace, and
// convjit_kernel_finish adds them in slice order and applies the
// epilogue.
// A stride-1 bwddata runs as the forward conv it equals: dx from dy and
// the filters transposed, their taps flipped (the Problem is that conv's;
// wgmma_forward_equivalent).
// Where it applies (dispatcher/backends/jit/wgmma_conv.hpp): f16 and
// bf16, one group, channels-last x with 16-byte aligned strides (TMA's
// rule), conv strides up to 8 (TMA's traversal stride), any fused
// epilogue (common/fused_epilogue.cuh, applied as the tile is stored).  Filters
// TMA cannot read in place (K C R S) are first copied, K R S C, into the
// workspace (convjit_kernel_prepare); so are a bwddata's, transposed and
// flipped, but where their channels are contiguous (K R S C, a 1x1
// conv's): the producer then reads w itself, whose boxes are MN-major for
// the transposed GEMM (P::FILTERS_MN).
// A fwd whose channels TMA cannot map (a stem's 3) runs with its
// horizontal taps folded into its channels (P::FOLD, conv/folded_taps.cuh):
// the first pass writes x' and w' into the workspace, which both maps
// read, and the Problem is their conv's (one tap along W).
#include "common/fused_epilogue.cuh"
#include "common/grid.cuh"
#include "common/tma.cuh"
#include "common/vector_memory.cuh"
#include "common/wgmma.cuh"
#include "conv/folded_taps.cuh"
#include "conv/im2col_loads.cuh"
#include "conv/packed_filters.cuh"
#include "conv/wgmma_conv_shape.cuh"
#include "conv/wgmma_conv_tile.cuh"
#include "conv/wgmma_pipeline.cuh"

namespace convjit_device {
namespace conv_fwd_wgmma {

typedef Problem P;
using namespace wgmma_conv_tile;

// The K steps: every tap's channels in blocks of the step's, a window
// row's taps a step where a stage takes them all (P::ROW_TAPS).
__device__ __forceinline__ int channel_blocks() {
  return static_cast<int>((P::CG + P::STEP - 1) / P::STEP);
}
__device__ __forceinline__ int row_tap_groups() { return static_cast<int>(P::S) / row_taps(); }
__device__ __forceinline__ int k_steps() {
  return static_cast<int>(P::T * P::R) * row_tap_groups() * channel_blocks();
}
// The first of a K step's taps: its group's first along the row.
__device__ __forceinline__ FilterTap step_tap(int step) {
  const FilterTap group = filter_tap(step / channel_blocks(), row_tap_groups());
  return {group.t, group.r, group.s * row_taps()};
}

// Where each consumer's box of A starts (window_anchor): one box of the
// tile's pixels from its first anchor, or with row taps one a consumer
// from its own first anchor (one past the last pixel: the last's, whose
// rows are not stored).
struct TileAnchors {
  Anchor at[2];
};
__device__ __forceinline__ index_t output_pixels() { return P::N * P::OD * P::OH * anchor_row(); }
__device__ __forceinline__ TileAnchors tile_anchors(index_t anchor0) {
  TileAnchors anchors;
  for (int p = 0; p < (row_taps() > 1 ? pixel_consumers() : 1); ++p) {
    const index_t m = anchor0 + static_cast<index_t>(p) * kBlockM;
    anchors.at[p] = window_anchor(m < output_pixels() ? m : output_pixels() - 1);
  }
  return anchors;
}

// One K step's loads: A's pixels at the step's first tap (with row taps,
// a box a consumer), B's N filters at each of its taps (load_filters).
// With P::FILTERS_MN (a stride-1 bwddata's filters in place) B reads w at
// the taps flipped.
template <int N, class Shared, class Barrier>
__device__ __forceinline__ void load_stage(const tensor_maps_t& maps, Shared a, Shared b,
                                           Barrier full, const TileAnchors& anchors, int step,
                                           int filter0) {
  const FilterTap tap = step_tap(step);
  const int c0 = step % channel_blocks() * step_channels();
  if (cluster_shares_pixels()) {
    if (loads_shared_operand())
      load_pixels(a, maps.map[0], full, c0, anchors.at[0], tap, cluster_mask());
  } else if (row_taps() == 1)
    load_pixels(a, maps.map[0], full, c0, anchors.at[0], tap);
  else
    for (int p = 0; p < pixel_consumers(); ++p)
      load_pixels(&a[p * a_region_bytes() / 4], maps.map[0], full, c0, anchors.at[p], tap);
  for (int s = 0; s < row_taps(); ++s) {
    const auto box = &b[static_cast<unsigned>(s) * b_tap_bytes<N>() / 4];
    if (P::FILTERS_MN)
      load_filters<N>(box, maps.map[1], full, c0, static_cast<int>(P::S) - 1 - tap.s - s,
                      static_cast<int>(P::R) - 1 - tap.r, static_cast<int>(P::T) - 1 - tap.t,
                      filter0);
    else
      load_filters<N>(box, maps.map[1], full, c0, tap.s + s, tap.r, tap.t, filter0);
  }
}

// A block's work: its tile of y and its slice of the tile's K steps.
// Blocks run the filter tiles fastest, then the pixels', then the slices;
// in clusters over pixel tiles, the cluster's blocks take the same filter
// tile for as many consecutive pixel tiles, whose count is rounded up to
// whole clusters.  A pixel tile past the end (the last cluster's, where
// they do not divide) stores nothing, but loads its cluster's first pixel
// tile's A: the cluster's blocks run the same steps, and its pixels are
// real anchors.  Clusters over filter tiles (P::CLUSTER_PIXELS) take
// consecutive tiles as blocks without clusters do: whole clusters of
// filter tiles, the same pixel tile.
__device__ __forceinline__ index_t pixel_cluster() {
  return cluster_shares_pixels() ? 1 : cluster_size();
}
struct Work {
  index_t tile, split, pixel0, anchor0;
  int filter0;
  Slice slice;
};
template <int N>
__device__ __forceinline__ index_t filter_tiles() {
  return (P::K + tile_filters<N>() - 1) / tile_filters<N>();
}
__device__ __forceinline__ index_t pixel_tiles() {
  const index_t per = static_cast<index_t>(tile_pixels()) * pixel_cluster();
  return (output_pixels() + per - 1) / per * pixel_cluster();
}
template <int N>
__device__ __forceinline__ index_t tile_count() {
  return pixel_tiles() * filter_tiles<N>();
}
template <int N>
__device__ __forceinline__ Work work_of(index_t block) {
  const index_t tile = block % tile_count<N>(), split = block / tile_count<N>();
  const index_t group = tile / pixel_cluster(), rank = tile % pixel_cluster();
  const index_t pixel0 = (group / filter_tiles<N>() * pixel_cluster() + rank) * tile_pixels();
  return {tile,
          split,
          pixel0,
          pixel0 < output_pixels() ? pixel0 : pixel0 - rank * tile_pixels(),
          static_cast<int>(group % filter_tiles<N>() * tile_filters<N>()),
          k_slice(split, k_steps())};
}

// Stream-K (P::STREAM_K blocks, conv/wgmma_conv_tile.cuh): every tile's
// K steps, `units`; a block's work starts at the first of its units, then
// at each next tile's first, each up to the next tile or the block's
// last unit.
template <int N>
__device__ __forceinline__ index_t units() {
  return tile_count<N>() * k_steps();
}
template <int N>
__device__ __forceinline__ auto stream_k_work() {
  const index_t steps = k_steps();
  return block_work(stream_k_start(blockIdx.x, units<N>()),
                    stream_k_start(blockIdx.x + 1ll, units<N>()),
                    [steps](index_t unit) { return (unit / steps + 1) * steps; });
}
template <int N>
__device__ __forceinline__ Work stream_k_work_of(index_t unit) {
  const index_t steps = k_steps(), tile = unit / steps, first = tile * steps;
  const index_t end = stream_k_start(blockIdx.x + 1ll, units<N>()) - first;
  Work work = work_of<N>(tile);
  work.slice = {static_cast<int>(unit - first),
                static_cast<int>((end < steps ? end : steps) - (unit - first))};
  return work;
}

// The producer's loop: each of the slice's steps' loads into its stage
// of the ring.
template <int N, class Tiles, class Ring>
__device__ __forceinline__ void produce(const tensor_maps_t& maps, Tiles tiles, const Ring& ring,
                                        const Work& work) {
  const TileAnchors anchors = tile_anchors(work.anchor0);
  produce_steps(
      ring, work.slice.steps, stage_bytes<N>(), loaded_bytes<N>(), [&](int step, unsigned at) {
        load_stage<N>(maps, &tiles[at], &tiles[at + a_bytes() / 4], ring.full_barrier(step),
                      anchors, work.slice.first + step, work.filter0);
      });
}

// y, written a pixel's filters at a time: anchor m's pixel, none past
// the last or along a widened row's reach (anchor_row).
struct Output {
  index_t channels, channel_stride;
  bool vectors;

  __device__ __forceinline__ index_t offset(index_t m) const {
    const index_t row = anchor_row();
    const index_t ow = m % row, oh = m / row % P::OH, od = m / (row * P::OH) % P::OD;
    if (m >= output_pixels() || ow >= P::OW) return -1;
    return m / (row * P::OH * P::OD) * P::YS0 + od * P::YS2 + oh * P::YS3 + ow * P::YS4;
  }
};
__device__ __forceinline__ Output y_output() {
  return {P::K, P::YS1, chunked(P::K, P::YS1, P::YS0, P::YS2, P::YS3, P::YS4)};
}

// The block's tiles of y (its own, in ping-pong every G-th, or with
// Stream-K its units' tiles and parts of tiles), or its slice's partial
// sums.
template <int N, class Tiles, class Barriers>
__device__ __forceinline__ void run_tiles(const tensor_maps_t& maps, Tiles smem, Barriers full,
                                          Barriers empty, Barriers consumers, storage_t* y,
                                          scratch_t* workspace, const FusedEpilogue<P>& epilogue) {
  const auto produce_work = [&](const Ring<Barriers>& stages, const Work& work) {
    produce<N>(maps, smem, stages, work);
  };
  const auto store_work = [&](const Ring<Barriers>& stages, const Work& work, int j) {
    consume_and_store<N>(
        smem, stages, work.slice.steps, consumers, j, y, y_output(), work.pixel0,
        output_pixels() - work.pixel0, work.filter0, epilogue, epilogue.beta,
        TileSums{partial_tile<N>(workspace, work.split, work.tile, tile_count<N>()), workspace,
                 k_steps(), units<N>(), filter_tiles<N>()},
        maps);
  };
  CONVJIT_IF_CONSTANT (P::STREAM_K != 0)
    run_block_work(
        ring(full, empty), consumers, stream_k_work<N>(),
        [](index_t unit) { return stream_k_work_of<N>(unit); }, produce_work, store_work);
  else
    run_block_tiles(
        ring(full, empty), consumers, tile_count<N>() * P::SPLIT,
        [](index_t block) { return work_of<N>(block); }, produce_work, store_work);
}

template <int N>
__device__ __forceinline__ void finish(storage_t* y, scratch_t* workspace,
                                       const FusedEpilogue<P>& epilogue) {
  const Work work = work_of<N>(finished_tile<N>());
  finish_tile<N>(workspace, work.tile, tile_count<N>(), y, y_output(), work.pixel0, work.filter0,
                 epilogue, epilogue.beta);
}

}  // namespace conv_fwd_wgmma
}  // namespace convjit_device

// The register cap at entry (BLOCKS_PER_SM blocks of 256 or 384 threads
// an SM: 255, 168 or 128 registers) is what lets setmaxnreg move registers between
// the warpgroups.
CONVJIT_KERNEL_BOUNDED(CONVJIT_WGMMA_BLOCK_THREADS(Problem::CONSUMERS), Problem::BLOCKS_PER_SM)
convjit_kernel(const convjit_device::storage_t* /*x*/, const convjit_device::storage_t* /*w*/,
               convjit_device::storage_t* y, float alpha, float beta,
               convjit_device::scratch_t* workspace, const convjit_device::storage_t* bias,
               const convjit_device::storage_t* residual,
               const CONVJIT_GRID_CONSTANT convjit_device::tensor_maps_t maps) {
  using namespace convjit_device;
  using namespace convjit_device::conv_fwd_wgmma;
  CONVJIT_DYNAMIC_SHARED_ARRAY(float, smem);
  CONVJIT_SHARED_ARRAY(mbarrier_t, full, kMaxStages);
  CONVJIT_SHARED_ARRAY(mbarrier_t, empty, kMaxStages);
  CONVJIT_SHARED_ARRAY(mbarrier_t, consumers, CONVJIT_WGMMA_CONSUMER_BARRIERS);
  const FusedEpilogue<P> epilogue{alpha, beta, bias, residual};
  // A consumer's N: the tile's, but 128 each of a 256-filter tile's two.
  CONVJIT_IF_CONSTANT (P::TILE_N == 32)
    run_tiles<32>(maps, smem, full, empty, consumers, y, workspace, epilogue);

  else CONVJIT_IF_CONSTANT (P::TILE_N == 64)
    run_tiles<64>(maps, smem, full, empty, consumers, y, workspace, epilogue);
  else
    run_tiles<128>(maps, smem, full, empty, consumers, y, workspace, epilogue);
}

// The second pass of split-K (P::SPLIT > 1; launched only then, and
// compiled to nothing otherwise, which keeps NVRTC's time down).
CONVJIT_KERNEL convjit_kernel_finish(const convjit_device::storage_t* /*x*/,
                                     const convjit_device::storage_t* /*w*/,
                                     convjit_device::storage_t* y, float alpha, float beta,
                                     convjit_device::scratch_t* workspace,
                                     const convjit_device::storage_t* bias,
                                     const convjit_device::storage_t* residual) {
  using namespace convjit_device;
  using namespace convjit_device::conv_fwd_wgmma;
  CONVJIT_IF_CONSTANT (P::SPLIT > 1) {
    const FusedEpilogue<P> epilogue{alpha, beta, bias, residual};
    CONVJIT_IF_CONSTANT (P::TILE_N == 32)
      finish<32>(y, workspace, epilogue);
    else CONVJIT_IF_CONSTANT (P::TILE_N == 64)
      finish<64>(y, workspace, epilogue);
    else
      finish<128>(y, workspace, epilogue);
  }
}

// The first pass where the host asks for it (wgmma_conv.hpp): w copied in
// K T R S CG order, which map 1 then reads; for a bwddata (FLIP), the
// transposed filters' taps flipped; where the conv folds its taps
// (FOLD), x' and w' (conv/folded_taps.cuh), which both maps read.
CONVJIT_KERNEL convjit_kernel_prepare(const convjit_device::storage_t* __restrict__ x,
                                      const convjit_device::storage_t* __restrict__ w,
                                      convjit_device::storage_t* /*y*/, float /*alpha*/,
                                      float /*beta*/, convjit_device::scratch_t* workspace) {
  using namespace convjit_device;
  CONVJIT_IF_CONSTANT (Problem::FOLD != 0)
    fold_taps(x, w, workspace_storage(workspace));
  else CONVJIT_IF_CONSTANT (Problem::FLIP != 0)
    pack_filters<FlippedTaps<ForwardFilterOrder>>(w, workspace_storage(workspace));
  else
    pack_filters<ForwardFilterOrder>(w, workspace_storage(workspace));
}
