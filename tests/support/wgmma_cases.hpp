// The modes of tests/emulator_templates/wgmma.cuh: each one's operands and
// the results expected, a matrix product worked in f64 on the decoded
// values, rounded to f32 after each wgmma as the emulator rounds (a GPU
// sums in its own order: support/test_templates.hpp's mma tolerance).
// Both warpgroups of the block compute 64 x N with their own A and the
// same B; A (64 x K per warpgroup) and B (N x K) are row-major in the
// input, 16-bit patterns as floats, or tf32 values.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "dispatcher/descriptor/half_precision.hpp"
#include "support/test_templates.hpp"

namespace convjit::test {

struct WgmmaMode {
  int type = 0;  // 0 f16, 1 bf16, 2 tf32 (the template's Type::kType)
  int n = 16;
  int k = 16;  // in all; 16 (8 for tf32) per wgmma
};

// The template's table (wgmma_test_mode), again: the planted bugs (6 and
// on) run mode 0's shapes.
inline WgmmaMode wgmma_mode(long long mode) {
  switch (mode) {
    case 1:
    case 14:
      return {1, 64, 64};
    case 2:
      return {0, 64, 16};
    case 3:
      return {2, 8, 8};
    case 4:
      return {0, 256, 16};
    case 5:
      return {0, 32, 16};
    case 13:
      return {1, 128, 32};
    default:
      return {0, 16, 16};
  }
}

inline constexpr long long kWgmmaWorkingModes[] = {0, 1, 2, 3, 4, 5, 13, 14};
inline constexpr long long kWgmmaModes = 15;

struct WgmmaCase {
  long long mode = 0;
  std::vector<float> input;
  std::size_t output_size = 0;
  std::vector<float> expected;
};

inline float wgmma_decode(int type, float stored) {
  if (type == 2) return std::bit_cast<float>(std::bit_cast<std::uint32_t>(stored) & 0xffffe000u);
  const auto bits = static_cast<std::uint16_t>(stored);
  return type == 0 ? half_to_float(Half{bits}) : bf16_to_float(BFloat16{bits});
}

inline WgmmaCase wgmma_case(long long mode) {
  const WgmmaMode m = wgmma_mode(mode);
  std::mt19937 rng(static_cast<unsigned>(97 + mode));
  std::uniform_int_distribution<int> small(-64, 64);
  std::uniform_real_distribution<float> real(-2.0f, 2.0f);
  const std::size_t a_size = 2 * 64 * static_cast<std::size_t>(m.k);
  const std::size_t b_size = static_cast<std::size_t>(m.n) * static_cast<std::size_t>(m.k);
  WgmmaCase c;
  c.mode = mode;
  for (std::size_t i = 0; i < a_size + b_size; ++i) {
    const float v = static_cast<float>(small(rng)) / 32.0f;  // exact in f16 and bf16
    c.input.push_back(m.type == 0   ? static_cast<float>(float_to_half(v).bits)
                      : m.type == 1 ? static_cast<float>(float_to_bf16(v).bits)
                                    : real(rng));
  }
  c.output_size = 2 * 64 * static_cast<std::size_t>(m.n);
  if (mode >= 6 && mode <= 12) return c;
  const int step = m.type == 2 ? 8 : 16;
  for (int g = 0; g < 2; ++g)
    for (int row = 0; row < 64; ++row)
      for (int col = 0; col < m.n; ++col) {
        float d = 0.0f;
        for (int k0 = 0; k0 < m.k; k0 += step) {
          double sum = d;
          for (int k = k0; k < k0 + step; ++k) {
            const float a = c.input[static_cast<std::size_t>((g * 64 + row) * m.k + k)];
            const float b = c.input[a_size + static_cast<std::size_t>(col * m.k + k)];
            sum += double{wgmma_decode(m.type, a)} * double{wgmma_decode(m.type, b)};
          }
          d = static_cast<float>(sum);
        }
        c.expected.push_back(d);
      }
  return c;
}

}  // namespace convjit::test
