// The first pass of a Hopper conv that folds its horizontal taps into its
// channels (dispatcher/backends/jit/tap_fold.hpp): for x whose channels
// TMA cannot map (a stem's 3), it writes into the workspace, channels-last,
//   x'[n, d, h, ow, s FC + c] = x[n, c, d, h, ow FSW - FPW + s FDW]
// (zero outside x and past FS FC channels), and at FOFFSET
//   w'[k, t, r, s FC + c] = w[k, c, t, r, s].
// The Problem is the folded conv's (C = C', W = OW, S = 1); the F
// constants are the caller's x and w and its window along W.  A thread
// writes a 16-byte chunk of x' (gathered through x's strides, or where x
// is channels-last in whole chunks, copied), or a weight of w'.
#pragma once
#include "common/grid.cuh"
#include "common/vector_memory.cuh"
#include "conv/packed_filters.cuh"

namespace convjit_device {
namespace folded_taps {

typedef Problem P;

// x''s 16-byte chunks: its pixels' C' channels.
__device__ __forceinline__ index_t chunks() {
  return P::N * P::D * P::H * P::W * (P::C / kChunkElements);
}

// Folded channel k of x's row at (n, d, h), from its column iw0 (the
// output column's first tap).
__device__ __forceinline__ float folded_value(const storage_t* row, index_t iw0, index_t k) {
  const index_t s = k / P::FC, c = k % P::FC;
  const index_t iw = iw0 + s * P::FDW;
  if (s >= P::FS || iw < 0 || iw >= P::FW) return 0.0f;
  return load(row[c * P::FXS1 + iw * P::FXS4]);
}

// x's row of pixel q of x' (its n, d and h), and the column of its first
// tap.
struct PixelRow {
  const storage_t* row;
  index_t iw0;
};
__device__ __forceinline__ PixelRow pixel_row(const storage_t* x, index_t q) {
  const index_t ow = q % P::W;
  q /= P::W;
  const index_t h = q % P::H;
  q /= P::H;
  const index_t d = q % P::D, n = q / P::D;
  return {x + n * P::FXS0 + d * P::FXS2 + h * P::FXS3, ow * P::FSW - P::FPW};
}

// Whether a row's folded channels lie side by side in x: channels-last
// (a pixel's FC channels adjacent, its pixels FC apart) and taps one pixel
// apart, so that folded channel k of the output column whose first tap is
// iw0 is x's element iw0 FC + k of the row (a stem's NHWC x).
__device__ __forceinline__ bool folds_in_place() {
  return P::FXS1 == 1 && P::FXS4 == P::FC && P::FDW == 1;
}

// A chunk of x' from its elements' run in x (folds_in_place), which
// starts at folded channel k0: their bits, unconverted, and past FS FC
// channels the zero fill.
__device__ __forceinline__ Vec128 run_chunk(const storage_t* run, index_t k0) {
  unsigned bits[kChunkElements];
#pragma unroll
  for (int j = 0; j < kChunkElements; ++j)
    bits[j] = k0 + j < P::FS * P::FC ? storage_bits(run[j]) : 0u;
  return chunk_of_bits(bits);
}

// Chunk i of x' (8 of pixel i / (C' / 8)'s channels), gathered element
// by element through x's strides, so that any layout folds; where the
// row's folded channels lie side by side and all the column's taps fall
// inside x (all but the columns the padding reaches), loaded from their
// run, without each element's tap, channel and bounds: the pass was
// issue-bound, ~12 instructions an element.  A chunk a thread,
// neighbouring threads on neighbouring chunks: a pixel's chunks a thread,
// the stores took twice the sectors, and the gathers of a warp spanned
// twice the pixels: predicted for the H200 (batch 32), ResNet-50's stem
// bwdfilt's pass took 32-40 us, 22-23 so, and YOLO11n's 252-279 and
// 209-233; the fwd's (w' too) the same, 34-42 and 40-41.
__device__ __forceinline__ void gather_chunk(const storage_t* __restrict__ x,
                                             storage_t* __restrict__ folded, index_t i) {
  const index_t pixel_chunks = P::C / kChunkElements;
  const PixelRow at = pixel_row(x, i / pixel_chunks);
  const index_t k0 = i % pixel_chunks * kChunkElements;
  if (folds_in_place() && at.iw0 >= 0 && at.iw0 + P::FS <= P::FW) {
    store_128(folded + i * kChunkElements, run_chunk(at.row + at.iw0 * P::FC + k0, k0));
    return;
  }
  float v[kChunkElements];
#pragma unroll
  for (int j = 0; j < kChunkElements; ++j) v[j] = folded_value(at.row, at.iw0, k0 + j);
  store_128(folded + i * kChunkElements, pack_chunk(v));
}

// Whether x's taps copy as whole chunks (copy_chunk): channels-last,
// every chunk aligned, and C' exactly FS FC (no zero fill past it).
__device__ __forceinline__ bool copies_chunks(const storage_t* x) {
  return chunked(P::FC, P::FXS1, P::FXS0, P::FXS2, P::FXS3, P::FXS4) && P::FS * P::FC == P::C &&
         chunk_aligned(x);
}

// Chunk i of x' where x's taps copy as whole chunks (a bwdfilt's narrow
// layers, tap_fold.hpp): a 16-byte load and store.  Gathered element by
// element a pixel a thread, the pass was predicted at 0.53 ms for
// YOLO11n's 16-channel b1.conv (batch 32), four times the conv it serves.
__device__ __forceinline__ void copy_chunk(const storage_t* __restrict__ x,
                                           storage_t* __restrict__ folded, index_t i) {
  const index_t tap_chunks = P::FC / kChunkElements, pixel_chunks = P::FS * tap_chunks;
  const index_t j = i % pixel_chunks;
  const PixelRow at = pixel_row(x, i / pixel_chunks);
  const index_t iw = at.iw0 + j / tap_chunks * P::FDW;
  const bool inside = iw >= 0 && iw < P::FW;
  const storage_t* chunk = at.row + iw * P::FXS4 + j % tap_chunks * kChunkElements;
  store_128(folded + i * kChunkElements, inside ? load_128(chunk) : Vec128{});
}

// Weight i of w': the packed forward order of the folded conv (K T R C',
// its one tap along W), whose channel k is tap s = k / FC, channel
// c = k % FC of w.
__device__ __forceinline__ void fold_weight(const storage_t* __restrict__ w,
                                            storage_t* __restrict__ folded, index_t i) {
  const FilterElement e = ForwardFilterOrder::element(i);
  const index_t s = e.c / P::FC, c = e.c % P::FC;
  const float v =
      s < P::FS ? load(w[e.f * P::FWS0 + c * P::FWS1 + e.t * P::FWS2 + e.r * P::FWS3 + s * P::FWS4])
                : 0.0f;
  folded[i] = store(v);
}

// Where folded weight (k, t, r, c') of dw' lands in the caller's w, or -1
// for c' past FS FC: the zero fill, no weight's.
__device__ __forceinline__ index_t folded_weight(index_t k, index_t t, index_t r, index_t c) {
  const index_t s = c / P::FC;
  if (s >= P::FS) return -1;
  return k * P::FWS0 + c % P::FC * P::FWS1 + t * P::FWS2 + r * P::FWS3 + s * P::FWS4;
}

}  // namespace folded_taps

// x' alone, a chunk a thread: a bwdfilt's first pass, whose w' is its
// output (conv_bwdfilt_wgmma.cuh).  The host launches a thread a pixel
// (tap_fold.hpp): a thread a chunk, the analyser predicted a latency a
// round of blocks over C' / 8 times the rounds.
__device__ __forceinline__ void fold_x(const storage_t* __restrict__ x,
                                       storage_t* __restrict__ workspace) {
  const index_t chunks = folded_taps::chunks();
  if (folded_taps::copies_chunks(x)) {
#pragma unroll 1
    for (index_t i = thread_index(); i < chunks; i += thread_count())
      folded_taps::copy_chunk(x, workspace, i);
    return;
  }
#pragma unroll 1
  for (index_t i = thread_index(); i < chunks; i += thread_count())
    folded_taps::gather_chunk(x, workspace, i);
}

// x' and w', a chunk or a weight a thread.  Called
// only where the host folds (Problem::FOLD: conv_fwd_wgmma.cuh's first
// pass, whose CONVJIT_IF_CONSTANT compiles it nowhere else).
__device__ __forceinline__ void fold_taps(const storage_t* __restrict__ x,
                                          const storage_t* __restrict__ w,
                                          storage_t* __restrict__ workspace) {
  typedef Problem P;
  const index_t chunks = folded_taps::chunks();
  const index_t count = chunks + P::K * P::T * P::R * P::C;
  // Rolled: a first pass is all memory, and a small loop compiles fast.
#pragma unroll 1
  for (index_t i = thread_index(); i < count; i += thread_count()) {
    if (i < chunks)
      folded_taps::gather_chunk(x, workspace, i);
    else
      folded_taps::fold_weight(w, workspace + P::FOFFSET, i - chunks);
  }
}

}  // namespace convjit_device
