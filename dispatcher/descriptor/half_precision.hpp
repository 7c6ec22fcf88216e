// Storage types for IEEE binary16 and bfloat16 with exact float conversion
// (round to nearest even).  Hand-written because g++ 12 in C++20 has neither
// std::float16_t nor std::bfloat16_t, Debian ships no small library for it,
// and the F16C intrinsics would tie the host reference to -mf16c CPUs.
#pragma once

#include <bit>
#include <cstdint>

namespace convjit {

struct Half {
  std::uint16_t bits = 0;
};

struct BFloat16 {
  std::uint16_t bits = 0;
};

inline BFloat16 float_to_bf16(float value) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(value);
  if ((u & 0x7fffffffu) > 0x7f800000u)  // NaN: keep it quiet, never round to inf
    return {static_cast<std::uint16_t>((u >> 16) | 0x40u)};
  u += 0x7fffu + ((u >> 16) & 1u);
  return {static_cast<std::uint16_t>(u >> 16)};
}

inline float bf16_to_float(BFloat16 value) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(value.bits) << 16);
}

inline float half_to_float(Half value) {
  const std::uint32_t sign = static_cast<std::uint32_t>(value.bits & 0x8000u) << 16;
  const std::uint32_t exponent = (value.bits >> 10) & 0x1fu;
  std::uint32_t mantissa = value.bits & 0x3ffu;
  if (exponent == 0x1f)  // inf or NaN
    return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0)
    return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  if (mantissa == 0) return std::bit_cast<float>(sign);
  // Subnormal half: normalise into a float.
  int shift = 0;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    ++shift;
  }
  mantissa &= 0x3ffu;
  const auto float_exponent = static_cast<std::uint32_t>(113 - shift);
  return std::bit_cast<float>(sign | (float_exponent << 23) | (mantissa << 13));
}

inline Half float_to_half(float value) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(value);
  const auto sign = static_cast<std::uint16_t>((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return {static_cast<std::uint16_t>(sign | 0x7e00u)};   // NaN
  if (abs >= 0x477ff000u) return {static_cast<std::uint16_t>(sign | 0x7c00u)};  // overflow
  if (abs < 0x38800000u) {
    // Result is subnormal or zero: let float addition do the rounding by
    // aligning the value against 0.5 (the smallest normal half is 2^-14).
    const float aligned = std::bit_cast<float>(abs) + 0.5f;
    return {
        static_cast<std::uint16_t>(sign | (std::bit_cast<std::uint32_t>(aligned) - 0x3f000000u))};
  }
  const std::uint32_t odd = (abs >> 13) & 1u;
  const std::uint32_t rounded = abs + 0xc8000fffu + odd;  // rebias exponent, round to even
  return {static_cast<std::uint16_t>(sign | (rounded >> 13))};
}

}  // namespace convjit
