// The modes of tests/emulator_templates/tma.cuh: each one's tensor maps,
// grid and input, and the results expected, worked from the PTX ISA's
// definitions of tiled and im2col copies and of the swizzles, apart from
// the emulator's code.  tests/test_emulator_tma.cpp runs them in the
// emulator; a GPU comparison runs the same maps on a device.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "dispatcher/backends/emulator/kernel_emulator.hpp"
#include "dispatcher/tensor_maps/tensor_map_spec.hpp"
#include "support/test_templates.hpp"

namespace convjit::test {

struct TmaCase {
  long long mode = 0;
  long long threads = 3 * kWarpBlock;
  std::vector<float> input = iota_from(800, 1.0f);
  std::size_t output_size = 0;
  std::vector<TensorMapArgument> maps;
  std::vector<float> expected;  // the output; empty for the planted bugs
};

inline constexpr long long kTmaStoreBlocks = 10;

// ---- the maps ------------------------------------------------------------------

inline TensorMapSpec tma_tiled(std::vector<std::uint64_t> dims, std::vector<std::uint32_t> box,
                               TensorMapSwizzle swizzle = TensorMapSwizzle::none) {
  TensorMapSpec s;
  s.rank = static_cast<unsigned>(dims.size());
  std::uint64_t stride = 4;  // f32, packed
  for (unsigned d = 0; d < s.rank; ++d) {
    s.dims[d] = dims[d], s.box[d] = box[d];
    if (d > 0) s.strides[d - 1] = stride;
    stride *= dims[d];
  }
  s.swizzle = swizzle;
  return s;
}

// NHWC-like, channels innermost: (C, W[, H[, D]], N), packed.
inline TensorMapSpec tma_im2col(std::vector<std::uint64_t> dims, std::vector<int> lower,
                                std::vector<int> upper, std::uint32_t channels,
                                std::uint32_t pixels, std::uint32_t stride = 1,
                                TensorMapSwizzle swizzle = TensorMapSwizzle::none) {
  TensorMapSpec s = tma_tiled(dims, std::vector<std::uint32_t>(dims.size(), 1), swizzle);
  s.mode = TensorMapMode::im2col;
  s.box = {};
  for (std::size_t i = 0; i < lower.size(); ++i) {
    s.lower_corner[i] = lower[i], s.upper_corner[i] = upper[i];
    s.element_strides[i + 1] = stride;
  }
  s.channels_per_pixel = channels, s.pixels_per_column = pixels;
  return s;
}

inline TensorMapArgument tma_over_input(TensorMapSpec spec) {
  return {spec, TensorMapArgument::Operand::in0, 0};
}

// The template's coordinates (tma_test_coords), again.
inline void tma_case_coords(long long mode, int b, std::array<int, 5>& c, std::array<int, 3>& o) {
  constexpr int tile2d[3][2] = {{0, 0}, {-4, -5}, {36, 10}};
  constexpr int tile3d[3][3] = {{0, 0, 0}, {0, 1, 1}, {0, -1, 7}};
  constexpr int tile5d[3][5] = {{0, 0, 1, 0, 0}, {0, 1, 2, 1, 1}, {0, -1, 0, 0, 1}};
  constexpr int im2col_s1[3][6] = {{0, -1, 0, 0, 0, 0}, {0, 2, 1, 0, 2, 1}, {0, 3, 1, 0, 1, 2}};
  constexpr int im2col_s2[3][6] = {{0, -1, -1, 0, 1, 1}, {0, 1, 1, 1, 0, 2}, {0, 3, 1, 0, 2, 0}};
  c = {}, o = {};
  if (mode <= 3) {
    c[0] = tile2d[b][0], c[1] = tile2d[b][1];
  } else if (mode == 7) {
    c[0] = 8 * (b % 5), c[1] = 16 * (b / 5);
  } else if (mode == 4) {
    for (int i = 0; i < 3; ++i) c[i] = tile3d[b][i];
  } else if (mode == 17) {
    for (int i = 0; i < 5; ++i) c[i] = tile5d[b][i];
  } else if (mode == 16) {
    c[0] = b == 0 ? 0 : b == 1 ? -64 : 736;
  } else if (mode == 5 || mode == 6) {
    const auto& t = mode == 6 ? im2col_s2[b] : im2col_s1[b];
    for (int i = 0; i < 4; ++i) c[i] = t[i];
    o[0] = t[4], o[1] = t[5];
  } else if (mode == 18) {
    c[1] = c[2] = c[3] = -1, o[0] = 1, o[2] = 2;
  } else if (mode == 19) {
    c[1] = 10, c[2] = b % 2, o[0] = 3;
  }
}

// Map 0 of each mode (the planted bugs reuse those of the working modes).
inline TensorMapSpec tma_case_map(long long mode) {
  using S = TensorMapSwizzle;
  switch (mode) {
    case 1:
      return tma_tiled({40, 20}, {8, 16}, S::b32);
    case 2:
      return tma_tiled({40, 20}, {16, 8}, S::b64);
    case 3:
    case 13:
      return tma_tiled({40, 20}, {32, 4}, S::b128);
    case 4: {
      TensorMapSpec s = tma_tiled({8, 6, 9}, {8, 6, 9});
      s.element_strides = {1, 2, 3, 1, 1};
      return s;
    }
    case 5:  // corners that differ by dimension: W [-1, 3], H [0, 1]
    case 15:
      return tma_im2col({8, 5, 4, 2}, {-1, 0}, {-1, -2}, 8, 16);
    case 6:
      return tma_im2col({8, 5, 4, 2}, {-1, -1}, {-1, -1}, 8, 16, 2, S::b32);
    case 10:
      return tma_tiled({40, 40}, {8, 16});
    case 16:
      return tma_tiled({800}, {128});
    case 17:
      return tma_tiled({4, 2, 3, 2, 2}, {4, 2, 2, 2, 2});
    case 18:
      return tma_im2col({4, 3, 3, 3, 1}, {-1, -1, -1}, {-1, -1, -1}, 4, 32);
    case 19:
      return tma_im2col({4, 20, 2}, {-2}, {-2}, 4, 32);
    default:
      return tma_tiled({40, 20}, {8, 16});
  }
}

// ---- the expected results, from the ISA's definitions ------------------------------

// The input element at `g`, or 0 outside the tensor.
inline float tma_element(const std::vector<float>& in, const TensorMapSpec& s,
                         const std::array<std::int64_t, 5>& g) {
  std::uint64_t offset = 0;
  for (unsigned d = 0; d < s.rank; ++d) {
    if (g[d] < 0 || g[d] >= static_cast<std::int64_t>(s.dims[d])) return 0.0f;
    offset += static_cast<std::uint64_t>(g[d]) * (d == 0 ? 4 : s.strides[d - 1]);
  }
  return in[offset / 4];
}

// The box's values in shared-memory order before the swizzle.
inline std::vector<float> tma_tiled_values(const std::vector<float>& in, const TensorMapSpec& s,
                                           const std::array<int, 5>& c) {
  std::vector<float> values;
  std::array<std::int64_t, 5> g{};
  const auto extent = [&](unsigned d) {
    const std::uint32_t step = d == 0 ? 1 : s.element_strides[d];
    return d < s.rank ? (s.box[d] + step - 1) / step : 1;
  };
  for (std::uint32_t j4 = 0; j4 < extent(4); ++j4)
    for (std::uint32_t j3 = 0; j3 < extent(3); ++j3)
      for (std::uint32_t j2 = 0; j2 < extent(2); ++j2)
        for (std::uint32_t j1 = 0; j1 < extent(1); ++j1)
          for (std::uint32_t j0 = 0; j0 < extent(0); ++j0) {
            const std::uint32_t j[5] = {j0, j1, j2, j3, j4};
            for (unsigned d = 0; d < 5; ++d)
              g[d] = c[d] + static_cast<std::int64_t>(j[d]) * (d == 0 ? 1 : s.element_strides[d]);
            values.push_back(tma_element(in, s, g));
          }
  return values;
}

// im2col: pixels from the filter base, W fastest, each spatial coordinate
// wrapping from lower + extent - 1 + upper... back to the lower corner.
inline std::vector<float> tma_im2col_values(const std::vector<float>& in, const TensorMapSpec& s,
                                            const std::array<int, 5>& c,
                                            const std::array<int, 3>& o) {
  const unsigned spatial = s.rank - 2;
  std::array<std::int64_t, 3> base{c[1], c[2], c[3]};
  std::int64_t n = c[s.rank - 1];
  std::vector<float> values;
  for (std::uint32_t p = 0; p < s.pixels_per_column; ++p) {
    for (std::uint32_t ch = 0; ch < s.channels_per_pixel; ++ch) {
      std::array<std::int64_t, 5> g{c[0] + static_cast<std::int64_t>(ch)};
      for (unsigned i = 0; i < spatial; ++i) g[i + 1] = base[i] + o[i];
      g[s.rank - 1] = n;
      values.push_back(tma_element(in, s, g));
    }
    bool carry = true;
    for (unsigned i = 0; i < spatial && carry; ++i) {
      base[i] += s.element_strides[i + 1];
      carry = base[i] > static_cast<std::int64_t>(s.dims[i + 1]) - 1 + s.upper_corner[i];
      if (carry) base[i] = s.lower_corner[i];
    }
    if (carry) ++n;
  }
  return values;
}

// The shared array's contents: the value whose packed byte offset the
// swizzle moves to each position (the swizzle is its own inverse).
inline std::vector<float> tma_swizzled(const std::vector<float>& values, TensorMapSwizzle swizzle) {
  const unsigned bits = static_cast<unsigned>(swizzle);
  std::vector<float> shared(values.size());
  for (std::size_t p = 0; p < values.size(); ++p) {
    const std::size_t byte = 4 * p;
    const std::size_t from = byte ^ (((byte >> 7) & ((1u << bits) - 1)) << 4);
    shared[p] = values[from / 4];
  }
  return shared;
}

inline TmaCase tma_case(long long mode) {
  TmaCase k;
  k.mode = mode;
  const TensorMapSpec map = tma_case_map(mode);
  k.maps.push_back(tma_over_input(map));
  if (mode == 7 || mode == 11 || mode == 14) {
    k.threads = kTmaStoreBlocks * kWarpBlock;
    k.output_size = 800;
    k.maps.push_back(
        {tma_tiled({40, 20}, {8, 16}), TensorMapArgument::Operand::out, 0});
    if (mode == 7)
      for (float v : k.input) k.expected.push_back(2.0f * v);
    return k;
  }
  const std::size_t elements = box_bytes(map) / 4;
  k.output_size = 3 * elements;
  if ((mode >= 8 && mode <= 15) || mode == 20) return k;
  for (int b = 0; b < 3; ++b) {
    std::array<int, 5> c;
    std::array<int, 3> o;
    tma_case_coords(mode, b, c, o);
    const std::vector<float> values = map.mode == TensorMapMode::tiled
                                          ? tma_tiled_values(k.input, map, c)
                                          : tma_im2col_values(k.input, map, c, o);
    for (float v : tma_swizzled(values, map.swizzle)) k.expected.push_back(v);
  }
  return k;
}

// The modes that work, and the planted bugs.
inline constexpr long long kTmaWorkingModes[] = {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19};
inline constexpr long long kTmaModes = 21;

}  // namespace convjit::test
