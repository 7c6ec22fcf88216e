// Window arithmetic shared by the pooling templates.  P::MODE is 1 for max,
// 2 for average over input elements, 3 for average counting padding.
// Max picks the first element in window order (D, H, W) that is NaN, else
// the first that attains the maximum: the host reference's rule.
#pragma once
#include "common/taps.cuh"

namespace convjit_device {

typedef Problem P;

struct Window {
  TapRange d, h, w;
  index_t sd, sh, sw;  // input index of tap 0 in each dim
};

__device__ __forceinline__ Window window_at(index_t od, index_t oh, index_t ow) {
  Window win;
  win.d = valid_taps(od, P::D, P::T, P::PD, P::SD, P::DD);
  win.h = valid_taps(oh, P::H, P::R, P::PH, P::SH, P::DH);
  win.w = valid_taps(ow, P::W, P::S, P::PW, P::SW, P::DW);
  win.sd = od * P::SD - P::PD, win.sh = oh * P::SH - P::PH, win.sw = ow * P::SW - P::PW;
  return win;
}

__device__ __forceinline__ float divisor(const Window& win) {
  if (P::MODE == 2)
    return static_cast<float>((win.d.end - win.d.begin) * (win.h.end - win.h.begin) *
                              (win.w.end - win.w.begin));
  const index_t ed = win.sd + P::T < P::D + P::QD ? win.sd + P::T : P::D + P::QD;
  const index_t eh = win.sh + P::R < P::H + P::QH ? win.sh + P::R : P::H + P::QH;
  const index_t ew = win.sw + P::S < P::W + P::QW ? win.sw + P::S : P::W + P::QW;
  return static_cast<float>((ed - win.sd) * (eh - win.sh) * (ew - win.sw));
}

struct ArgMax {
  bool found;
  index_t d, h, w;  // input coordinates of the winner
  float value;
};

// The window's winner, its elements read through read(id, ih, iw), their
// input coordinates: from x itself, or from a tile staged in shared memory.
template <class Read>
__device__ __forceinline__ ArgMax argmax_of(const Window& win, const Read& read) {
  ArgMax best = {false, 0, 0, 0, -__int_as_float(0x7f800000)};  // -inf
  for (int t = win.d.begin; t < win.d.end; ++t)
    for (int r = win.h.begin; r < win.h.end; ++r)
      for (int s = win.w.begin; s < win.w.end; ++s) {
        if (best.found && best.value != best.value) return best;  // a NaN already won
        const index_t id = win.sd + t * P::DD, ih = win.sh + r * P::DH, iw = win.sw + s * P::DW;
        const float v = read(id, ih, iw);
        if (!best.found || v > best.value || v != v) best = {true, id, ih, iw, v};
      }
  return best;
}

// The sum of the window's elements (averages take no dilation).
template <class Read>
__device__ __forceinline__ float window_sum(const Window& win, const Read& read) {
  float sum = 0.0f;
  for (int t = win.d.begin; t < win.d.end; ++t)
    for (int r = win.h.begin; r < win.h.end; ++r)
      for (int s = win.w.begin; s < win.w.end; ++s)
        sum += read(win.sd + t * P::DD, win.sh + r * P::DH, win.sw + s * P::DW);
  return sum;
}

// The window's max, or its average.
template <class Read>
__device__ __forceinline__ float pooled(const Window& win, const Read& read) {
  return P::MODE == 1 ? argmax_of(win, read).value : window_sum(win, read) / divisor(win);
}

// Reads x's plane at `plane` (a pointer to its (n, c) origin).
struct PlaneReader {
  const storage_t* plane;
  __device__ __forceinline__ float operator()(index_t id, index_t ih, index_t iw) const {
    return load(plane[id * P::XS2 + ih * P::XS3 + iw * P::XS4]);
  }
};

__device__ __forceinline__ ArgMax argmax(const storage_t* plane, const Window& win) {
  return argmax_of(win, PlaneReader{plane});
}

}  // namespace convjit_device
