// Where wgmma.mma_async (sm_90a) finds its operands and puts its results,
// as the PTX ISA defines them ("Asynchronous Warpgroup Level Matrix
// Multiply-Accumulate": the matrix descriptor, the canonical shared-memory
// layouts, the register fragments).
//
// A shared operand is A (64 x K, rows M) or B (N x K, rows N), K = 16
// elements of 16 bits or 8 of tf32: 32 bytes a row either way.  Its
// descriptor holds the start address and two byte offsets, in 16-byte
// units, and a swizzle:
//   - K-major (K contiguous, the default): core matrices of 8 rows x 16
//     bytes; the leading offset (LBO) steps to the next 16 bytes of K
//     (unused when swizzled), the stride offset (SBO) to the next 8 rows;
//     swizzled, a row is the swizzle's span (32, 64, 128 bytes) apart;
//   - MN-major (transposed; 16-bit types only): 16 bytes of M or N per
//     core-matrix row, 8 rows along K; unswizzled, SBO steps along M/N
//     and LBO along K; swizzled, a row holds the span's elements of M/N,
//     LBO steps to the next span of M/N and SBO to the next 8 rows of K.
// The swizzle then XORs address bits [4, 4+b) with [7, 7+b) of the
// absolute shared address, as TMA's does, so a box a TMA load swizzled
// is read back by a descriptor with the same swizzle.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace convjit::emulator {

// The descriptor's bits 62-63.
enum class WgmmaSwizzle : std::uint8_t { none = 0, b128 = 1, b64 = 2, b32 = 3 };

struct MatrixDescriptor {
  std::uint32_t start = 0;    // bytes, within the 256 KiB shared window
  std::uint32_t leading = 0;  // bytes (LBO)
  std::uint32_t stride = 0;   // bytes (SBO)
  unsigned base_offset = 0;   // bits 49-51
  WgmmaSwizzle swizzle = WgmmaSwizzle::none;
};

// Bits 0-13: start >> 4 (of the address's low 18 bits); 16-29: LBO >> 4;
// 32-45: SBO >> 4; 49-51: base offset; 62-63: swizzle.
[[nodiscard]] MatrixDescriptor decode_matrix_descriptor(std::uint64_t bits);
[[nodiscard]] std::uint64_t encode_matrix_descriptor(const MatrixDescriptor& d);

// The bytes of one row of the layout: 16 unswizzled (a core matrix's
// row), else the swizzle's 32, 64 or 128.
[[nodiscard]] unsigned swizzle_span(WgmmaSwizzle swizzle);

enum class OperandMajor : std::uint8_t { k, mn };

// The shared byte address of element (row, k) of a shared operand.
[[nodiscard]] std::uint32_t operand_address(const MatrixDescriptor& d, OperandMajor major,
                                            std::size_t element_bytes, unsigned row, unsigned k);

// What makes a descriptor one the emulator cannot read exactly (a base
// offset other than 0, an MN-major tf32 operand); empty when none.
[[nodiscard]] std::string unemulated_descriptor(const MatrixDescriptor& d, OperandMajor major,
                                                std::size_t element_bytes);

// A register's place in the 64 x N (or 64 x K) matrix of a warpgroup.
struct FragmentPosition {
  unsigned row = 0, col = 0;
};

// Accumulator register `i` (0 to N/2 - 1, f32) of `lane` in warp `warp`
// (0-3) of the warpgroup: the mma.m16n8 accumulator layout, repeated
// along N, warp w holding rows 16w to 16w + 15.
[[nodiscard]] FragmentPosition accumulator_position(unsigned warp, unsigned lane, unsigned i);
// Element `i` (0-7) of A from registers, 16-bit: two per .b32 register,
// the low half first.
[[nodiscard]] FragmentPosition a16_position(unsigned warp, unsigned lane, unsigned i);
// Register `i` (0-3) of A from registers, tf32.
[[nodiscard]] FragmentPosition a_tf32_position(unsigned warp, unsigned lane, unsigned i);

}  // namespace convjit::emulator
