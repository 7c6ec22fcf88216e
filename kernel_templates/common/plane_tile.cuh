// What the kernels for layouts with W contiguous (NCHW and its kin:
// depthwise convs, pooling) share: a block computes one tile of kTileRows
// x kTileCols pixels of one (batch, channel) plane at one depth, a thread
// per pixel, reading a halo that the block first stages in shared memory
// with loads that run along W (common/plane_tile_shape.cuh).
#pragma once
#include "common/epilogue.cuh"
#include "common/taps.cuh"
#include "common/plane_tile_shape.cuh"

namespace convjit_device {

constexpr int kTileRows = CONVJIT_PLANE_TILE_ROWS;
constexpr int kTileCols = CONVJIT_PLANE_TILE_COLS;

// A block's tile of a tensor of N x planes x D x H x W: plane p of batch
// n, depth d, its first row and column.
struct PlaneTile {
  index_t n, p, d, row0, col0;
};
__device__ __forceinline__ index_t plane_tiles(index_t planes, index_t D, index_t H, index_t W) {
  return Problem::N * planes * D * ((H + kTileRows - 1) / kTileRows) *
         ((W + kTileCols - 1) / kTileCols);
}
__device__ __forceinline__ PlaneTile plane_tile(index_t block, index_t planes, index_t D,
                                                index_t H, index_t W) {
  const index_t cols = (W + kTileCols - 1) / kTileCols, rows = (H + kTileRows - 1) / kTileRows;
  const index_t plane = block / (cols * rows * D);
  return {plane / planes, plane % planes, block / (cols * rows) % D,
          block / cols % rows * kTileRows, block % cols * kTileCols};
}

// A halo: `depth` x `rows` x `cols` elements of one plane of a tensor,
// from (d0, h0, w0); zero outside the tensor.
struct Halo {
  index_t d0, h0, w0, depth, rows, cols;
  __device__ __forceinline__ index_t size() const { return depth * rows * cols; }
};

// Stages `halo` of the plane at `plane` (its offset) into `tile`, the
// block's threads striding along W.  The caller puts the barrier after.
template <class Shared>
__device__ __forceinline__ void stage_halo(Shared& tile, const storage_t* t, index_t plane,
                                           const Halo& halo, index_t D, index_t H, index_t W,
                                           index_t sd, index_t sh, index_t sw) {
  for (index_t e = threadIdx.x; e < halo.size(); e += Problem::BLOCK) {
    const index_t d = halo.d0 + e / (halo.rows * halo.cols);
    const index_t h = halo.h0 + e / halo.cols % halo.rows, w = halo.w0 + e % halo.cols;
    tile[e] = inside(d, h, w, D, H, W) ? load(t[plane + d * sd + h * sh + w * sw]) : 0.0f;
  }
}

// The halos of a tile through a window of Problem::T x R x S taps (with
// its strides SD.., dilations DD.. and pads PD..): the input a tile of
// outputs reads (fwd, bwdfilt), and the outputs a tile of inputs receives
// from (backward).  Their sizes are macros of the Problem's constants, as
// shared array sizes must be constant expressions for NVRTC.
#define CONVJIT_READING_HALO_ELEMENTS                                                   \
  (((Problem::T - 1) * Problem::DD + 1) *                                               \
   ((kTileRows - 1) * Problem::SH + (Problem::R - 1) * Problem::DH + 1) *               \
   ((kTileCols - 1) * Problem::SW + (Problem::S - 1) * Problem::DW + 1))
#define CONVJIT_RECEIVING_HALO_DEPTH \
  (((Problem::T - 1) * Problem::DD + Problem::SD - 1) / Problem::SD + 1)
#define CONVJIT_RECEIVING_HALO_ROWS \
  ((kTileRows - 1 + (Problem::R - 1) * Problem::DH + Problem::SH - 1) / Problem::SH + 1)
#define CONVJIT_RECEIVING_HALO_COLS \
  ((kTileCols - 1 + (Problem::S - 1) * Problem::DW + Problem::SW - 1) / Problem::SW + 1)
#define CONVJIT_RECEIVING_HALO_ELEMENTS \
  (CONVJIT_RECEIVING_HALO_DEPTH * CONVJIT_RECEIVING_HALO_ROWS * CONVJIT_RECEIVING_HALO_COLS)

__device__ __forceinline__ Halo reading_halo(const PlaneTile& b) {
  typedef Problem P;
  return {b.d * P::SD - P::PD,
          b.row0 * P::SH - P::PH,
          b.col0 * P::SW - P::PW,
          (P::T - 1) * P::DD + 1,
          (kTileRows - 1) * P::SH + (P::R - 1) * P::DH + 1,
          (kTileCols - 1) * P::SW + (P::S - 1) * P::DW + 1};
}

// Reads a staged halo at the coordinates of the tensor it came from.
template <class Shared>
struct HaloReader {
  const Shared& tile;
  Halo halo;
  __device__ __forceinline__ float operator()(index_t d, index_t h, index_t w) const {
    return tile[((d - halo.d0) * halo.rows + h - halo.h0) * halo.cols + w - halo.w0];
  }
};

// For backward kernels, whose inputs receive from the outputs whose taps
// reach them.  The outputs o with o * stride - pad + t * dilation in
// [first, first + span] for some tap t < taps lie in
// [floor((first + pad - (taps - 1) dilation) / stride),
//  floor((first + span + pad) / stride)]: at most
// ceil((span + (taps - 1) dilation) / stride) + 1 of them.
__device__ __forceinline__ index_t halo_extent(index_t span, index_t taps, index_t stride,
                                               index_t dilation) {
  return (span + (taps - 1) * dilation + stride - 1) / stride + 1;
}
__device__ __forceinline__ index_t halo_first(index_t first, index_t taps, index_t pad,
                                              index_t stride, index_t dilation) {
  return floor_div(first + pad - (taps - 1) * dilation, stride);
}

__device__ __forceinline__ Halo receiving_halo(const PlaneTile& b) {
  typedef Problem P;
  return {halo_first(b.d, P::T, P::PD, P::SD, P::DD),
          halo_first(b.row0, P::R, P::PH, P::SH, P::DH),
          halo_first(b.col0, P::S, P::PW, P::SW, P::DW),
          halo_extent(0, P::T, P::SD, P::DD),
          halo_extent(kTileRows - 1, P::R, P::SH, P::DH),
          halo_extent(kTileCols - 1, P::S, P::SW, P::DW)};
}

// The output from which input i receives through tap t, relative to the
// halo's first (`first`), or -1 where none does (off the stride).
__device__ __forceinline__ index_t source(index_t i, index_t t, index_t pad, index_t stride,
                                          index_t dilation, index_t first) {
  const index_t o = i + pad - t * dilation;
  const index_t q = floor_div(o, stride);
  return q * stride == o ? q - first : -1;
}

}  // namespace convjit_device
