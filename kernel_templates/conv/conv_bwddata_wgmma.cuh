// Convolution backward data of a strided conv for Hopper (sm_90a), by
// stride phases.  Along an axis of stride s, pad p, dilation d, the dx
// pixels i = phase + s j of one phase (0 <= phase < s) take
//   dx[phase + s j] = sum_r dy[j + (phase + p - r d) / s] w[r]
// over the taps r with phase + p - r d a multiple of s: every
// (s / gcd(s, d))-th tap from the last.  Each phase is so a stride-1
// forward conv of dy, and a block computes a tile of one phase's dx (128
// or 256 of its pixels, in N, D, H, W order, by Problem::TILE_N
// channels, 256, 128, 64 or 32) as conv_fwd_wgmma.cuh computes y:
//   - the producer, per K step of 64 filters of one of the phase's taps
//     (P::STEP: 32 or 16 where the conv has no more): an im2col box of dy
//     (the tile's pixels x the step's filters, its edges TMA's zero fill)
//     and the filters (the tile's channels x the same filters of that
//     tap): a box of the workspace's copy of w in [C][T R S][K] order
//     (convjit_kernel_prepare), or, where w's channels are contiguous, an
//     MN-major box of w itself for every 64 of the tile's channels, which
//     the wgmmas transpose (P::FILTERS_MN);
//   - the consumers and the epilogue of wgmma_conv_tile.cuh.
// A phase without taps (a 1x1 stride-2 conv's three of four) is dx =
// beta dx: with P::FILL_PHASES the first pass writes it in streaming
// stores, and the tiles cover the phases with taps alone; else (where
// the first pass copies w) its tiles write it, as of no K steps.
// As in conv_fwd_wgmma.cuh, P::SPLIT blocks may share a tile, each over
// a slice of its phase's K steps, convjit_kernel_finish adding them.
// One im2col map serves every phase: its anchors start at the least of
// the phases' first offsets, P::AD, AH, AW (the host's origin), run
// ceil(size / s) pixels, the widest phase's, along each axis, and each tap
// reads at its offset from there.  The narrower phases' last pixels are
// computed and not stored.
// Stride-1 bwddata runs through conv_fwd_wgmma.cuh instead, as the one
// forward conv it is (dispatcher/backends/jit/wgmma_conv.hpp).
#include "common/epilogue.cuh"
#include "common/grid.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"
#include "conv/im2col_loads.cuh"
#include "conv/packed_filters.cuh"
#include "conv/wgmma_conv_shape.cuh"
#include "conv/wgmma_conv_tile.cuh"
#include "conv/wgmma_pipeline.cuh"

namespace convjit_device {
namespace conv_bwddata_wgmma {

typedef Problem P;
using namespace wgmma_conv_tile;

// An axis of the window: D, H or W.
struct Axis {
  index_t stride, pad, dilation, taps, size, origin;
};
__device__ __forceinline__ Axis axis(int a) {
  if (a == 0) return {P::SD, P::PD, P::DD, P::T, P::D, P::AD};
  if (a == 1) return {P::SH, P::PH, P::DH, P::R, P::H, P::AH};
  return {P::SW, P::PW, P::DW, P::S, P::W, P::AW};
}
// The pixels of a phase along the axis, the widest phase's.
__device__ __forceinline__ index_t phase_extent(const Axis& x) {
  return (x.size + x.stride - 1) / x.stride;
}

__device__ __forceinline__ int gcd(int a, int b) {
  while (b != 0) {
    const int r = a % b;
    a = b, b = r;
  }
  return a;
}

// One phase's taps along an axis: `count` of them, w's taps last, last -
// step, ..., in the order of their increasing dy offsets.
struct AxisTaps {
  int phase, count, last, step;
};
__device__ __forceinline__ AxisTaps axis_taps(const Axis& x, int phase) {
  const int stride = static_cast<int>(x.stride), taps = static_cast<int>(x.taps);
  const int step = stride / gcd(stride, static_cast<int>(x.dilation));
  for (int r = taps - 1; r >= 0 && r > taps - 1 - step; --r)
    if (((phase + x.pad - r * x.dilation) % x.stride + x.stride) % x.stride == 0)
      return {phase, r / step + 1, r, step};
  return {phase, 0, 0, step};
}
// Tap q's index in w, and its dy offset from the map's origin.
__device__ __forceinline__ int tap_of(const AxisTaps& a, int q) { return a.last - q * a.step; }
__device__ __forceinline__ int offset_of(const Axis& x, const AxisTaps& a, int q) {
  return static_cast<int>((a.phase + x.pad - tap_of(a, q) * x.dilation) / x.stride - x.origin);
}

__device__ __forceinline__ int channel_blocks() {
  return static_cast<int>((P::K + P::STEP - 1) / P::STEP);
}

// Whether some tap lands on the phase along the axis.
__device__ __forceinline__ bool has_taps(const Axis& x, index_t phase) {
  return axis_taps(x, static_cast<int>(phase)).count > 0;
}

// The phases the tiles cover along an axis, and the i-th of them: every
// phase, or with P::FILL_PHASES those some tap lands on.
__device__ __forceinline__ int covered_phases(const Axis& x) {
  if (!P::FILL_PHASES) return static_cast<int>(x.stride);
  int count = 0;
  for (int phase = 0; phase < x.stride; ++phase) count += has_taps(x, phase);
  return count;
}
__device__ __forceinline__ int covered_phase(const Axis& x, int i) {
  if (!P::FILL_PHASES) return i;
  int phase = 0;
  for (; phase < x.stride - 1; ++phase)
    if (has_taps(x, phase) && i-- == 0) break;
  return phase;
}

// A block's work: its phase's taps on each axis, its first pixel (of the
// phase grid), its first channel, and its slice of the phase's K steps.
// Blocks run the channel tiles fastest, then the pixels', then the
// phases, then the slices.
struct Work {
  AxisTaps d, h, w;
  index_t tile, split, pixel0;
  int channel0;
  Slice slice;
};
__device__ __forceinline__ int phase_steps(const AxisTaps& d, const AxisTaps& h,
                                           const AxisTaps& w) {
  return d.count * h.count * w.count * channel_blocks();
}
__device__ __forceinline__ index_t grid_pixels() {
  return P::N * phase_extent(axis(0)) * phase_extent(axis(1)) * phase_extent(axis(2));
}
template <int N>
__device__ __forceinline__ index_t channel_tiles() {
  return (P::C + tile_filters<N>() - 1) / tile_filters<N>();
}
__device__ __forceinline__ index_t pixel_tiles() {
  return (grid_pixels() + tile_pixels() - 1) / tile_pixels();
}
template <int N>
__device__ __forceinline__ index_t tile_count() {
  return covered_phases(axis(0)) * covered_phases(axis(1)) * covered_phases(axis(2)) *
         pixel_tiles() * channel_tiles<N>();
}
template <int N>
__device__ __forceinline__ Work work_of(index_t block) {
  const index_t tile = block % tile_count<N>(), split = block / tile_count<N>();
  const int phase = static_cast<int>(tile / (channel_tiles<N>() * pixel_tiles()));
  const int ph = covered_phases(axis(1)), pw = covered_phases(axis(2));
  const AxisTaps d = axis_taps(axis(0), covered_phase(axis(0), phase / (ph * pw))),
                 h = axis_taps(axis(1), covered_phase(axis(1), phase / pw % ph)),
                 w = axis_taps(axis(2), covered_phase(axis(2), phase % pw));
  return {d,
          h,
          w,
          tile,
          split,
          tile / channel_tiles<N>() % pixel_tiles() * tile_pixels(),
          static_cast<int>(tile % channel_tiles<N>() * tile_filters<N>()),
          k_slice(split, phase_steps(d, h, w))};
}

// Pixel m of the phase grid: its image and its place along each axis.
struct GridPixel {
  index_t n, jd, jh, jw;
};
__device__ __forceinline__ GridPixel grid_pixel(index_t m) {
  const index_t ew = phase_extent(axis(2)), eh = phase_extent(axis(1)),
                ed = phase_extent(axis(0));
  return {m / (ew * eh * ed), m / (ew * eh) % ed, m / ew % eh, m % ew};
}

// Where the block's pixels start in dy's map: its first pixel of the
// phase grid, from the map's origin.
__device__ __forceinline__ Anchor first_anchor(const Work& work) {
  const GridPixel first = grid_pixel(work.pixel0);
  return {static_cast<int>(first.n), static_cast<int>(first.jd + P::AD),
          static_cast<int>(first.jh + P::AH), static_cast<int>(first.jw + P::AW)};
}

// One K step's loads: dy's box at the step's tap, the filters' at it
// (load_filters: the copy's, or w's own with P::FILTERS_MN).
template <int N, class Shared, class Barrier>
__device__ __forceinline__ void load_stage(const tensor_maps_t& maps, Shared a, Shared b,
                                           Barrier full, const Work& work, const Anchor& at,
                                           int step) {
  const int q = step / channel_blocks(), c0 = step % channel_blocks() * step_channels();
  const int qw = q % work.w.count, qh = q / work.w.count % work.h.count,
            qd = q / (work.w.count * work.h.count);
  load_im2col(a, maps.map[0], full, c0, at,
              {offset_of(axis(0), work.d, qd), offset_of(axis(1), work.h, qh),
               offset_of(axis(2), work.w, qw)});
  load_filters<N>(b, maps.map[1], full, c0, tap_of(work.w, qw), tap_of(work.h, qh),
                  tap_of(work.d, qd), work.channel0);
}

template <int N, class Tiles, class Ring>
__device__ __forceinline__ void produce(const tensor_maps_t& maps, Tiles tiles, const Ring& ring,
                                        const Work& work) {
  const Anchor first = first_anchor(work);
  produce_steps(ring, work.slice.steps, stage_bytes<N>(), [&](int step, unsigned at) {
    load_stage<N>(maps, &tiles[at], &tiles[at + a_bytes() / 4], ring.full_barrier(step), work,
                  first, work.slice.first + step);
  });
}

// dx, written a pixel's channels at a time: the phase's pixels within dx.
struct Output {
  index_t channels, channel_stride;
  bool vectors;
  int pd, ph, pw;

  __device__ __forceinline__ index_t offset(index_t m) const {
    if (m >= grid_pixels()) return -1;
    const GridPixel g = grid_pixel(m);
    const index_t id = pd + P::SD * g.jd, ih = ph + P::SH * g.jh, iw = pw + P::SW * g.jw;
    if (id >= P::D || ih >= P::H || iw >= P::W) return -1;
    return g.n * P::XS0 + id * P::XS2 + ih * P::XS3 + iw * P::XS4;
  }
};
__device__ __forceinline__ Output dx_output(const Work& work) {
  return {P::C, P::XS1, chunked(P::C, P::XS1, P::XS0, P::XS2, P::XS3, P::XS4), work.d.phase,
          work.h.phase, work.w.phase};
}

// With P::FILL_PHASES, the first pass: dx = beta dx (not read where beta
// is 0) on the pixels of the phases no tap lands on, which no tile
// covers; a thread per chunk of a pixel's channels, 16 bytes where they
// run in chunks.
__device__ __forceinline__ void fill_phases_without_taps(storage_t* dx, float beta) {
  const index_t chunks = (P::C + kChunkElements - 1) / kChunkElements;
  const bool vectors = chunked(P::C, P::XS1, P::XS0, P::XS2, P::XS3, P::XS4) && chunk_aligned(dx);
  const float zero[kChunkElements] = {};
#pragma unroll 1
  for (index_t q = thread_index(); q < P::N * P::D * P::H * P::W * chunks; q += thread_count()) {
    const index_t pixel = q / chunks, iw = pixel % P::W, ih = pixel / P::W % P::H,
                  id = pixel / (P::W * P::H) % P::D, n = pixel / (P::W * P::H * P::D);
    if (has_taps(axis(0), id % P::SD) && has_taps(axis(1), ih % P::SH) &&
        has_taps(axis(2), iw % P::SW))
      continue;  // a tile's
    write_channels(dx, n * P::XS0 + id * P::XS2 + ih * P::XS3 + iw * P::XS4,
                   q % chunks * kChunkElements, P::C, P::XS1, vectors, zero, 1.0f, beta);
  }
}

// The block's tiles of its phases' dx (its own, or in ping-pong every
// G-th), or its slice's partial sums.
template <int N, class Tiles, class Barriers>
__device__ __forceinline__ void run_tiles(const tensor_maps_t& maps, Tiles smem, Barriers full,
                                          Barriers empty, Barriers consumers, storage_t* dx,
                                          scratch_t* workspace, float alpha, float beta) {
  run_block_tiles(
      ring(full, empty), consumers, tile_count<N>() * P::SPLIT,
      [](index_t block) { return work_of<N>(block); },
      [&](const Ring<Barriers>& stages, const Work& work) { produce<N>(maps, smem, stages, work); },
      [&](const Ring<Barriers>& stages, const Work& work, int j) {
        consume_and_store<N>(
            smem, stages, work.slice.steps, consumers, j, dx, dx_output(work), work.pixel0,
            grid_pixels() - work.pixel0, work.channel0, ScaledEpilogue{alpha}, beta,
            TileSums{partial_tile<N>(workspace, work.split, work.tile, tile_count<N>()), workspace,
                     0, 0, 0},
            maps);
      });
}

template <int N>
__device__ __forceinline__ void finish(storage_t* dx, scratch_t* workspace, float alpha,
                                       float beta) {
  const Work work = work_of<N>(finished_tile<N>());
  finish_tile<N>(workspace, work.tile, tile_count<N>(), dx, dx_output(work), work.pixel0,
                 work.channel0, ScaledEpilogue{alpha}, beta);
}

}  // namespace conv_bwddata_wgmma
}  // namespace convjit_device

// As conv_fwd_wgmma.cuh's: the register cap at entry lets setmaxnreg move
// registers between the warpgroups.
CONVJIT_KERNEL_BOUNDED(CONVJIT_WGMMA_BLOCK_THREADS(Problem::CONSUMERS), Problem::BLOCKS_PER_SM)
convjit_kernel(const convjit_device::storage_t* /*dy*/, const convjit_device::storage_t* /*w*/,
               convjit_device::storage_t* dx, float alpha, float beta,
               convjit_device::scratch_t* workspace, const convjit_device::storage_t* /*bias*/,
               const convjit_device::storage_t* /*residual*/,
               const CONVJIT_GRID_CONSTANT convjit_device::tensor_maps_t maps) {
  using namespace convjit_device;
  using namespace convjit_device::conv_bwddata_wgmma;
  CONVJIT_DYNAMIC_SHARED_ARRAY(float, smem);
  CONVJIT_SHARED_ARRAY(mbarrier_t, full, kMaxStages);
  CONVJIT_SHARED_ARRAY(mbarrier_t, empty, kMaxStages);
  CONVJIT_SHARED_ARRAY(mbarrier_t, consumers, CONVJIT_WGMMA_CONSUMER_BARRIERS);
  // A consumer's N: the tile's, but 128 each of a 256-filter tile's two.
  CONVJIT_IF_CONSTANT (P::TILE_N == 32)

    run_tiles<32>(maps, smem, full, empty, consumers, dx, workspace, alpha, beta);
  else CONVJIT_IF_CONSTANT (P::TILE_N == 64)
    run_tiles<64>(maps, smem, full, empty, consumers, dx, workspace, alpha, beta);
  else
    run_tiles<128>(maps, smem, full, empty, consumers, dx, workspace, alpha, beta);
}

// The second pass of split-K (P::SPLIT > 1; launched only then, and
// compiled to nothing otherwise, which keeps NVRTC's time down).
CONVJIT_KERNEL convjit_kernel_finish(const convjit_device::storage_t* /*dy*/,
                                     const convjit_device::storage_t* /*w*/,
                                     convjit_device::storage_t* dx, float alpha, float beta,
                                     convjit_device::scratch_t* workspace) {
  using namespace convjit_device;
  using namespace convjit_device::conv_bwddata_wgmma;
  CONVJIT_IF_CONSTANT (P::SPLIT > 1) {
    CONVJIT_IF_CONSTANT (P::TILE_N == 32)
      finish<32>(dx, workspace, alpha, beta);
    else CONVJIT_IF_CONSTANT (P::TILE_N == 64)
      finish<64>(dx, workspace, alpha, beta);
    else
      finish<128>(dx, workspace, alpha, beta);
  }
}

// The first pass: beta dx on the phases without taps (P::FILL_PHASES), or
// w copied in [C][T R S][K] order, which map 1 reads (P::PACKED).
CONVJIT_KERNEL convjit_kernel_prepare(const convjit_device::storage_t* /*dy*/,
                                      const convjit_device::storage_t* __restrict__ w,
                                      convjit_device::storage_t* dx, float /*alpha*/, float beta,
                                      convjit_device::scratch_t* workspace) {
  using namespace convjit_device;
  CONVJIT_IF_CONSTANT (Problem::FILL_PHASES != 0)
    conv_bwddata_wgmma::fill_phases_without_taps(dx, beta);
  else
    pack_filters<BackwardDataFilterOrder>(w, workspace_storage(workspace));
}
