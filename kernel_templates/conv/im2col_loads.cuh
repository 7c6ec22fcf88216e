// TMA im2col loads of a conv's pixels (common/tma.cuh): a box of
// consecutive output pixels (in N, D, H, W order) by a block of channels,
// read from a map of rank P::RANK (the op's spatial dimensions + 2; W
// first after the channels) at one filter tap.  The map's corners, its
// traversal strides and its padding's zero fill make the pixels those of
// a window walking the output (dispatcher/backends/jit/wgmma_conv.cpp).
#pragma once
#include "common/tma.cuh"

namespace convjit_device {

// The anchors of an output row: its OW pixels, or where a stage takes a
// window row's taps from one box (Problem::ROW_TAPS = S, at stride 1
// along W), the row widened by the window's reach, (S - 1) DW: the map's
// upper W corner is raised by as much, so that the box of a tile's
// anchors at tap s = 0 holds tap s of anchor j at row j + s DW.  The
// widened row's last anchors are no output pixels (Output::offset: not
// stored).
__device__ __forceinline__ index_t anchor_row() {
  typedef Problem P;
  return P::ROW_TAPS > 1 ? P::OW + (P::S - 1) * P::DW : P::OW;
}

// Where anchor m's box starts in the map: its window's first input
// pixel, or in a map over the output itself (a 1 x 1 window), the pixel.
struct Anchor {
  int n, d, h, w;
};
__device__ __forceinline__ Anchor window_anchor(index_t m) {
  typedef Problem P;
  const index_t row = anchor_row();
  const index_t ow = m % row, oh = m / row % P::OH, od = m / (row * P::OH) % P::OD;
  return {static_cast<int>(m / (row * P::OH * P::OD)), static_cast<int>(od * P::SD - P::PD),
          static_cast<int>(oh * P::SH - P::PH), static_cast<int>(ow * P::SW - P::PW)};
}
__device__ __forceinline__ Anchor output_anchor(index_t m) {
  typedef Problem P;
  return {static_cast<int>(m / (P::OW * P::OH * P::OD)),
          static_cast<int>(m / (P::OW * P::OH) % P::OD), static_cast<int>(m / P::OW % P::OH),
          static_cast<int>(m % P::OW)};
}

// A filter tap: its index t R S + r S + s, and its im2col offsets.  Or,
// counting `taps_s` taps a row (a row's taps in groups: conv_fwd_wgmma's
// row taps), tap s of that row.
struct FilterTap {
  int t, r, s;
};
__device__ __forceinline__ FilterTap filter_tap(int tap,
                                                int taps_s = static_cast<int>(Problem::S)) {
  const int taps_r = static_cast<int>(Problem::R);
  return {tap / (taps_s * taps_r), tap / taps_s % taps_r, tap % taps_s};
}

// The box of channels from c0 at pixels from `at`, each read `offset`
// further along D, H and W: into this block, or with a `multicast` mask
// (cluster ranks) into each block it names.
struct Offsets {
  int d, h, w;
};
template <int Rank, class Shared, class Barrier>
__device__ __forceinline__ void load_im2col_box(Shared dst, const tensor_map_t& map, Barrier bar,
                                                const int (&coords)[Rank],
                                                const int (&offsets)[Rank - 2],
                                                unsigned short multicast) {
  if (multicast == 0)
    tma_load_im2col<Rank>(dst, map, bar, coords, offsets);
  else
    tma_load_im2col_multicast<Rank>(dst, map, bar, coords, offsets, multicast);
}
template <class Shared, class Barrier>
__device__ __forceinline__ void load_im2col(Shared dst, const tensor_map_t& map, Barrier bar,
                                            int c0, const Anchor& at, const Offsets& offset,
                                            unsigned short multicast = 0) {
  typedef Problem P;
  CONVJIT_IF_CONSTANT (P::RANK == 3)
    load_im2col_box<3>(dst, map, bar, {c0, at.w, at.n}, {offset.w}, multicast);
  else CONVJIT_IF_CONSTANT (P::RANK == 4)
    load_im2col_box<4>(dst, map, bar, {c0, at.w, at.h, at.n}, {offset.w, offset.h}, multicast);
  else
    load_im2col_box<5>(dst, map, bar, {c0, at.w, at.h, at.d, at.n}, {offset.w, offset.h, offset.d},
                       multicast);
}

// The same at filter tap `tap` of the conv's window (all zero in a map
// over the output).
template <class Shared, class Barrier>
__device__ __forceinline__ void load_pixels(Shared dst, const tensor_map_t& map, Barrier bar,
                                            int c0, const Anchor& at, const FilterTap& tap,
                                            unsigned short multicast = 0) {
  typedef Problem P;
  load_im2col(dst, map, bar, c0, at,
              {tap.t * static_cast<int>(P::DD), tap.r * static_cast<int>(P::DH),
               tap.s * static_cast<int>(P::DW)},
              multicast);
}

}  // namespace convjit_device
