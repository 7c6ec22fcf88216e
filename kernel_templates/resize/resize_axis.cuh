// Where a resize's outputs read its input along one axis: the device side
// of dispatcher/descriptor/resize_taps.hpp, in f32.  Every coordinate
// operation is rounded as written (the _rn intrinsics keep NVRTC from
// contracting them into an FMA), so that each output picks exactly the
// input the reference picks; only the blend of the taps' values may
// round differently.
//
// Problem gives, per axis (D, H, W): the sizes, the ratio in/out as f32
// bits (RD, RH, RW, computed by the host as the reference computes it)
// and the taps (TD, TH, TW: 2 on a linear axis of the op, 1 on a nearest
// one and on the unit axes of the canonical form); and the op's MODE and
// COORD (ResizeMode and ResizeCoordinates, op_descriptor.hpp).
#pragma once
#include "common/kernel_abi.cuh"

namespace convjit_device {

enum ResizeRounding { kFloor = 1, kCeil = 2, kRoundPreferFloor = 3, kRoundPreferCeil = 4 };
enum ResizeCoordinateRule {
  kAsymmetric = 0,
  kHalfPixel = 1,
  kPytorchHalfPixel = 2,
  kAlignCorners = 3,
  kTfHalfPixelForNn = 4
};

// An output's two taps (one on a nearest axis: weight 1 on `first`).
struct ResizeTap {
  index_t first, second;
  float first_weight, second_weight;
};

struct ResizeAxis {
  index_t in, out;
  float ratio;
  int taps;

  // The input coordinate output o maps to.
  __device__ __forceinline__ float source(index_t o) const {
    const float dst = static_cast<float>(o);
    switch (Problem::COORD) {
      case kHalfPixel:
        return __fsub_rn(__fmul_rn(ratio, __fadd_rn(dst, 0.5f)), 0.5f);
      case kPytorchHalfPixel:
        return out > 1 ? __fsub_rn(__fmul_rn(ratio, __fadd_rn(dst, 0.5f)), 0.5f) : 0.0f;
      case kTfHalfPixelForNn:
        return __fmul_rn(ratio, __fadd_rn(dst, 0.5f));
    }
    return __fmul_rn(ratio, dst);  // asymmetric, align_corners
  }

  __device__ __forceinline__ index_t nearest(float x) const {
    float r;
    switch (Problem::MODE) {  // linear's unit axes: floor, into input 0
      case kCeil:
        r = ceilf(x);
        break;
      case kRoundPreferFloor:
        r = ceilf(__fsub_rn(x, 0.5f));
        break;
      case kRoundPreferCeil:
        r = floorf(__fadd_rn(x, 0.5f));
        break;
      default:
        r = floorf(x);
    }
    const index_t i = static_cast<index_t>(r);
    return i < 0 ? 0 : i > in - 1 ? in - 1 : i;
  }

  __device__ __forceinline__ ResizeTap tap(index_t o) const {
    if (taps == 1 && in == 1) return {0, 0, 1.0f, 0.0f};  // every rounding clamps to 0
    const float x = source(o);
    if (taps == 1) {
      const index_t i = nearest(x);
      return {i, i, 1.0f, 0.0f};
    }
    const float clamped = x > 0.0f ? x : 0.0f;
    index_t first = static_cast<index_t>(floorf(clamped));
    first = first < in - 1 ? first : in - 1;
    float w = __fsub_rn(clamped, static_cast<float>(first));
    w = w < 0.0f ? 0.0f : w > 1.0f ? 1.0f : w;
    return {first, first + (first < in - 1 ? 1 : 0), __fsub_rn(1.0f, w), w};
  }

  // The first output whose first tap is at least `target` (out if none):
  // first taps never decrease along the outputs.  The affine map's inverse
  // guesses it; the walks make it exact in a step or two.
  __device__ __forceinline__ index_t first_output_from(index_t target) const {
    const bool half = Problem::COORD == kHalfPixel || Problem::COORD == kPytorchHalfPixel;
    const float shift = half || Problem::COORD == kTfHalfPixelForNn ? 0.5f : 0.0f;
    const float guess =
        ratio > 0.0f ? (static_cast<float>(target) + (half ? 0.5f : 0.0f)) / ratio - shift : 0.0f;
    index_t o = guess <= 0.0f                      ? 0
                : guess >= static_cast<float>(out) ? out
                                                   : static_cast<index_t>(guess);
    while (o > 0 && tap(o - 1).first >= target) --o;
    while (o < out && tap(o).first < target) ++o;
    return o;
  }

  // The outputs [begin, end) that read input i: those whose first tap is
  // i, and on a linear axis those whose second tap is (first tap i - 1).
  __device__ __forceinline__ void outputs_reading(index_t i, index_t& begin, index_t& end) const {
    if (in == 1 && out == 1) {  // the unit axes of the canonical form, mostly
      begin = 0, end = 1;
      return;
    }
    begin = first_output_from(taps == 2 ? i - 1 : i);
    end = first_output_from(i + 1);
  }

  // The weight with which output o reads input i (0 where it does not).
  __device__ __forceinline__ float weight(index_t o, index_t i) const {
    const ResizeTap t = tap(o);
    float w = t.first == i ? t.first_weight : 0.0f;
    if (taps == 2 && t.second == i) w += t.second_weight;
    return w;
  }
};

struct ResizeAxes {
  ResizeAxis d, h, w;
};

__device__ __forceinline__ ResizeAxes resize_axes() {
  return {{Problem::D, Problem::OD, __int_as_float(static_cast<int>(Problem::RD)),
           static_cast<int>(Problem::TD)},
          {Problem::H, Problem::OH, __int_as_float(static_cast<int>(Problem::RH)),
           static_cast<int>(Problem::TH)},
          {Problem::W, Problem::OW, __int_as_float(static_cast<int>(Problem::RW)),
           static_cast<int>(Problem::TW)}};
}

// A tap's input index and weight: which = 0 the first, 1 the second.
__device__ __forceinline__ index_t tap_index(const ResizeTap& t, int which) {
  return which == 0 ? t.first : t.second;
}
__device__ __forceinline__ float tap_weight(const ResizeTap& t, int which) {
  return which == 0 ? t.first_weight : t.second_weight;
}

}  // namespace convjit_device
