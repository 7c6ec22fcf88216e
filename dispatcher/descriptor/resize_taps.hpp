// Where each output of a resize reads its input, per spatial dim: the one
// rule every backend follows (the JIT's kernels mirror it in f32).
//
// The ratio in/out is PyTorch's: 1/scale when a scale was given, else
// in/out (align_corners: (in - 1)/(out - 1)), computed in `Coord` (f32, or f64 for linear on f64 data, as
// PyTorch's opmath).  Nearest indices are then rounded and clamped into
// the input; linear takes the two neighbours of the clamped coordinate
// with PyTorch's guard (the upper one stays in the input, the weight in
// [0, 1]).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit {

// An output's two taps in one dim (nearest: weight 1 on `first`).
template <class Coord>
struct ResizeTap {
  std::int64_t first = 0, second = 0;
  Coord first_weight = 1, second_weight = 0;
};

template <class Coord>
class ResizeAxis {
 public:
  // scale: the caller's out/in, or 0 to derive it from the sizes.
  ResizeAxis(ResizeMode mode, ResizeCoordinates coordinates, std::int64_t in, std::int64_t out,
             double scale)
      : mode_(mode), coordinates_(coordinates), in_(in), out_(out), ratio_(ratio_of(scale)) {}

  // The ratio in/out the coordinates are mapped with (the JIT's kernels
  // take it as a constant).
  [[nodiscard]] Coord ratio() const { return ratio_; }

  [[nodiscard]] ResizeTap<Coord> tap(std::int64_t o) const {
    const Coord x = source(o);
    ResizeTap<Coord> t;
    if (mode_ != ResizeMode::linear) {
      t.first = t.second = clamp(rounded(x));
      return t;
    }
    const Coord clamped = std::max(x, Coord(0));
    t.first = std::min(static_cast<std::int64_t>(std::floor(clamped)), in_ - 1);
    t.second = t.first + (t.first < in_ - 1 ? 1 : 0);
    t.second_weight =
        std::min(std::max(clamped - static_cast<Coord>(t.first), Coord(0)), Coord(1));
    t.first_weight = Coord(1) - t.second_weight;
    return t;
  }

 private:
  // align_corners with a given scale divides by the unrounded output length
  // in * scale, as ONNX's reference does (PyTorch passes no scale there).
  [[nodiscard]] Coord ratio_of(double scale) const {
    if (coordinates_ == ResizeCoordinates::align_corners) {
      if (out_ <= 1) return Coord(0);
      if (scale > 0)
        return static_cast<Coord>(static_cast<double>(in_ - 1) /
                                  (static_cast<double>(in_) * scale - 1));
      return static_cast<Coord>(in_ - 1) / static_cast<Coord>(out_ - 1);
    }
    if (scale > 0) return static_cast<Coord>(1.0 / scale);
    return static_cast<Coord>(in_) / static_cast<Coord>(out_);
  }

  [[nodiscard]] Coord source(std::int64_t o) const {
    const auto dst = static_cast<Coord>(o);
    switch (coordinates_) {
      case ResizeCoordinates::half_pixel:
        return ratio_ * (dst + Coord(0.5)) - Coord(0.5);
      case ResizeCoordinates::pytorch_half_pixel:
        return out_ > 1 ? ratio_ * (dst + Coord(0.5)) - Coord(0.5) : Coord(0);
      case ResizeCoordinates::tf_half_pixel_for_nn:
        return ratio_ * (dst + Coord(0.5));
      case ResizeCoordinates::asymmetric:
      case ResizeCoordinates::align_corners:
        break;
    }
    return ratio_ * dst;
  }

  [[nodiscard]] std::int64_t rounded(Coord x) const {
    switch (mode_) {
      case ResizeMode::nearest_ceil:
        return static_cast<std::int64_t>(std::ceil(x));
      case ResizeMode::nearest_round_prefer_floor:
        return static_cast<std::int64_t>(std::ceil(x - Coord(0.5)));
      case ResizeMode::nearest_round_prefer_ceil:
        return static_cast<std::int64_t>(std::floor(x + Coord(0.5)));
      default:
        return static_cast<std::int64_t>(std::floor(x));
    }
  }

  [[nodiscard]] std::int64_t clamp(std::int64_t i) const {
    return std::clamp<std::int64_t>(i, 0, in_ - 1);
  }

  ResizeMode mode_;
  ResizeCoordinates coordinates_;
  std::int64_t in_, out_;
  Coord ratio_;
};

}  // namespace convjit
