// wgmma's operand and fragment layouts (dispatcher/backends/emulator/
// wgmma_layout.hpp): the descriptor's bit fields; the canonical layouts on
// hand-worked addresses; each swizzled layout reading back exactly the box
// a TMA load with the same swizzle wrote (the pairing real kernels use);
// and the register fragments covering their matrices once each.
#include <gtest/gtest.h>

#include <set>
#include <utility>

#include "dispatcher/backends/emulator/bulk_tensor_box.hpp"
#include "dispatcher/backends/emulator/wgmma_layout.hpp"

namespace convjit::emulator {
namespace {

TEST(WgmmaLayout, TheDescriptorsBitFields) {
  const MatrixDescriptor d{0x1230, 256, 1024, 0, WgmmaSwizzle::b128};
  const std::uint64_t bits = encode_matrix_descriptor(d);
  EXPECT_EQ(bits, 0x123ull | 0x10ull << 16 | 0x40ull << 32 | 1ull << 62);
  const MatrixDescriptor back = decode_matrix_descriptor(bits);
  EXPECT_EQ(back.start, 0x1230u);
  EXPECT_EQ(back.leading, 256u);
  EXPECT_EQ(back.stride, 1024u);
  EXPECT_EQ(back.swizzle, WgmmaSwizzle::b128);
  // Only the address's low 18 bits are encoded.
  EXPECT_EQ(
      decode_matrix_descriptor(encode_matrix_descriptor({0x41230, 16, 16, 0, WgmmaSwizzle::none}))
          .start,
      0x1230u);
  EXPECT_EQ(decode_matrix_descriptor(5ull << 49).base_offset, 5u);
}

// A 64 x 16 f16 A, K-major and unswizzled: core matrices of 8 rows x 16
// bytes, 2 along K (LBO 128), 8 along M (SBO 256).
TEST(WgmmaLayout, KMajorCoreMatricesByHand) {
  const MatrixDescriptor d{0, 128, 256, 0, WgmmaSwizzle::none};
  EXPECT_EQ(operand_address(d, OperandMajor::k, 2, 0, 0), 0u);
  EXPECT_EQ(operand_address(d, OperandMajor::k, 2, 1, 0), 16u);
  EXPECT_EQ(operand_address(d, OperandMajor::k, 2, 0, 8), 128u);
  EXPECT_EQ(operand_address(d, OperandMajor::k, 2, 8, 0), 256u);
  EXPECT_EQ(operand_address(d, OperandMajor::k, 2, 9, 10), 16u + 256u + 128u + 4u);
  // tf32 (4 bytes, K = 8): the same 32 bytes a row.
  EXPECT_EQ(operand_address(d, OperandMajor::k, 4, 9, 5), 16u + 256u + 128u + 4u);
  // MN-major, unswizzled: 8 elements of M a core-matrix row, rows along K.
  const MatrixDescriptor t{0, 256, 128, 0, WgmmaSwizzle::none};
  EXPECT_EQ(operand_address(t, OperandMajor::mn, 2, 3, 0), 6u);
  EXPECT_EQ(operand_address(t, OperandMajor::mn, 2, 0, 1), 16u);
  EXPECT_EQ(operand_address(t, OperandMajor::mn, 2, 8, 0), 128u);
  EXPECT_EQ(operand_address(t, OperandMajor::mn, 2, 0, 8), 256u);
}

TensorMapSwizzle tma_swizzle(WgmmaSwizzle s) {
  return s == WgmmaSwizzle::b128  ? TensorMapSwizzle::b128
         : s == WgmmaSwizzle::b64 ? TensorMapSwizzle::b64
                                  : TensorMapSwizzle::b32;
}

// K-major: a TMA box of 64 rows of one span of K, packed and swizzled; the
// descriptor of k-slice j (16 elements) starts 32 j bytes in, SBO 8 rows.
TEST(WgmmaLayout, SwizzledKMajorOperandsReadBackTheTmaBox) {
  for (WgmmaSwizzle s : {WgmmaSwizzle::b32, WgmmaSwizzle::b64, WgmmaSwizzle::b128}) {
    const unsigned span = swizzle_span(s), k_extent = span / 2;
    for (unsigned j = 0; j < k_extent / 16; ++j) {
      const MatrixDescriptor d{1024 + 32 * j, 16, 8 * span, 0, s};
      for (unsigned r = 0; r < 64; ++r)
        for (unsigned k = 0; k < 16; ++k) {
          const std::size_t packed = r * span + 2 * (16 * j + k);
          ASSERT_EQ(operand_address(d, OperandMajor::k, 2, r, k),
                    1024 + swizzled_offset(packed, tma_swizzle(s)))
              << "span " << span << " slice " << j << " row " << r << " k " << k;
        }
    }
  }
}

// MN-major B of N = 128: two TMA boxes of 64 elements of N x 16 rows of
// K, one after the other (LBO 2048), 8 rows of K 1024 bytes apart (SBO).
TEST(WgmmaLayout, SwizzledMnMajorOperandsReadBackTheTmaBoxes) {
  const MatrixDescriptor d{0, 2048, 1024, 0, WgmmaSwizzle::b128};
  for (unsigned n = 0; n < 128; ++n)
    for (unsigned k = 0; k < 16; ++k) {
      const std::size_t box = n / 64 * 2048, packed = k * 128 + 2 * (n % 64);
      ASSERT_EQ(operand_address(d, OperandMajor::mn, 2, n, k),
                box + swizzled_offset(packed, TensorMapSwizzle::b128))
          << "n " << n << " k " << k;
    }
}

template <class Position>
void expect_covers_once(unsigned rows, unsigned cols, unsigned registers, Position position) {
  std::set<std::pair<unsigned, unsigned>> seen;
  for (unsigned warp = 0; warp < 4; ++warp)
    for (unsigned lane = 0; lane < 32; ++lane)
      for (unsigned i = 0; i < registers; ++i) {
        const FragmentPosition p = position(warp, lane, i);
        ASSERT_LT(p.row, rows);
        ASSERT_LT(p.col, cols);
        ASSERT_TRUE(seen.insert({p.row, p.col}).second) << p.row << ", " << p.col;
      }
  EXPECT_EQ(seen.size(), std::size_t{rows} * cols);
}

TEST(WgmmaLayout, RegisterFragmentsCoverTheirMatricesOnce) {
  expect_covers_once(64, 256, 128, accumulator_position);
  expect_covers_once(64, 16, 8, a16_position);
  expect_covers_once(64, 8, 4, a_tf32_position);
  // Warp 1, lane 5, register 6: rows 16 + 1 + 8, columns 8 + 2.
  EXPECT_EQ(accumulator_position(1, 5, 6).row, 25u);
  EXPECT_EQ(accumulator_position(1, 5, 6).col, 10u);
  // The first four registers are mma.m16n8's accumulator fragment.
  EXPECT_EQ(accumulator_position(0, 7, 3).row, 9u);
  EXPECT_EQ(accumulator_position(0, 7, 3).col, 7u);
}

TEST(WgmmaLayout, UnemulatedDescriptorsAreNamed) {
  EXPECT_NE(unemulated_descriptor({0, 16, 1024, 3, WgmmaSwizzle::b128}, OperandMajor::k, 2)
                .find("base offset 3"),
            std::string::npos);
  EXPECT_NE(unemulated_descriptor({}, OperandMajor::mn, 4).find("16-bit types only"),
            std::string::npos);
  EXPECT_TRUE(unemulated_descriptor({}, OperandMajor::k, 4).empty());
}

}  // namespace
}  // namespace convjit::emulator
