// f16 and bf16 conversions: exact round trips, round-to-nearest-even,
// subnormals, overflow, infinities and NaN.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "dispatcher/descriptor/half_precision.hpp"

namespace convjit {
namespace {

TEST(HalfPrecision, EveryHalfRoundTripsThroughFloat) {
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const Half h{static_cast<std::uint16_t>(bits)};
    const float f = half_to_float(h);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(half_to_float(float_to_half(f))));
      continue;
    }
    ASSERT_EQ(float_to_half(f).bits, h.bits) << std::hex << bits;
  }
}

TEST(HalfPrecision, KnownValues) {
  EXPECT_EQ(float_to_half(1.0f).bits, 0x3c00);
  EXPECT_EQ(float_to_half(-2.0f).bits, 0xc000);
  EXPECT_EQ(float_to_half(65504.0f).bits, 0x7bff);               // largest finite
  EXPECT_EQ(float_to_half(65520.0f).bits, 0x7c00);               // rounds to inf
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -24)).bits, 0x0001);  // smallest subnormal
  EXPECT_EQ(float_to_half(std::ldexp(1.0f, -26)).bits, 0x0000);  // underflows to zero
  EXPECT_EQ(half_to_float(Half{0x0001}), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(Half{0x7c00}), std::numeric_limits<float>::infinity());
}

TEST(HalfPrecision, RoundsToNearestEven) {
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties go to the even 1.
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);
  // 1 + 3*2^-11 lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even).
  EXPECT_EQ(float_to_half(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);
  EXPECT_EQ(float_to_half(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)).bits, 0x3c01);
}

TEST(BFloat16, KnownValuesAndRounding) {
  EXPECT_EQ(float_to_bf16(1.0f).bits, 0x3f80);
  EXPECT_EQ(bf16_to_float(BFloat16{0x3f80}), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even.
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)).bits, 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(bf16_to_float(float_to_bf16(std::numeric_limits<float>::infinity())),
            std::numeric_limits<float>::infinity());
}

TEST(BFloat16, EveryBFloat16RoundTrips) {
  for (std::uint32_t bits = 0; bits <= 0xffff; ++bits) {
    const BFloat16 b{static_cast<std::uint16_t>(bits)};
    const float f = bf16_to_float(b);
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16(f).bits, b.bits) << std::hex << bits;
  }
}

}  // namespace
}  // namespace convjit
