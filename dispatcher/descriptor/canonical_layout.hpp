// The canonical 5D form (N, C, D, H, W) every backend computes in: 1D and 2D
// problems get leading unit spatial dims, so one set of loops (host) or one
// set of constants (JIT) serves every dim count.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit {

struct View5 {
  std::array<std::int64_t, 5> dims{};
  std::array<std::int64_t, 5> strides{};

  [[nodiscard]] std::int64_t offset(std::int64_t n, std::int64_t c, std::int64_t d, std::int64_t h,
                                    std::int64_t w) const {
    return n * strides[0] + c * strides[1] + d * strides[2] + h * strides[3] + w * strides[4];
  }
  [[nodiscard]] std::int64_t spatial_size() const { return dims[2] * dims[3] * dims[4]; }
  // Position of (d, h, w) in a dense buffer holding one (n, c) plane.
  [[nodiscard]] std::size_t plane_index(std::int64_t d, std::int64_t h, std::int64_t w) const {
    return static_cast<std::size_t>((d * dims[3] + h) * dims[4] + w);
  }
};

// Spatial parameters aligned with View5's D, H, W.
struct Window3 {
  std::array<std::int64_t, 3> size{1, 1, 1};
  std::array<std::int64_t, 3> pad_begin{}, pad_end{};
  std::array<std::int64_t, 3> stride{1, 1, 1}, dilation{1, 1, 1};
};

View5 canonical_view(const Dims5& dims, const Dims5& strides, int spatial_dims);
Window3 canonical_window(const OpDescriptor& desc);

}  // namespace convjit
