#include "dispatcher/backends/emulator/wgmma_layout.hpp"

#include <fmt/format.h>

#include "dispatcher/backends/emulator/bulk_tensor_box.hpp"

namespace convjit::emulator {

namespace {

constexpr std::uint64_t kField14 = (1u << 14) - 1;

std::uint32_t field(std::uint64_t bits, unsigned shift) {
  return static_cast<std::uint32_t>((bits >> shift) & kField14) << 4;
}

// The span's 16-byte chunks: 1, 2, 4 or 8.
unsigned chunks(WgmmaSwizzle swizzle) { return swizzle_span(swizzle) / 16; }

// The same address swizzle as TMA's (bulk_tensor_box.hpp), by its mode.
std::uint32_t swizzled(std::uint32_t address, WgmmaSwizzle swizzle) {
  const TensorMapSwizzle tma = swizzle == WgmmaSwizzle::b128  ? TensorMapSwizzle::b128
                               : swizzle == WgmmaSwizzle::b64 ? TensorMapSwizzle::b64
                                                              : TensorMapSwizzle::b32;
  return static_cast<std::uint32_t>(swizzled_offset(address, tma));
}

}  // namespace

MatrixDescriptor decode_matrix_descriptor(std::uint64_t bits) {
  return {field(bits, 0), field(bits, 16), field(bits, 32),
          static_cast<unsigned>((bits >> 49) & 7u), static_cast<WgmmaSwizzle>(bits >> 62)};
}

std::uint64_t encode_matrix_descriptor(const MatrixDescriptor& d) {
  const auto enc = [](std::uint32_t bytes) {
    return static_cast<std::uint64_t>((bytes & 0x3ffffu) >> 4);
  };
  return enc(d.start) | enc(d.leading) << 16 | enc(d.stride) << 32 |
         static_cast<std::uint64_t>(d.base_offset & 7u) << 49 |
         static_cast<std::uint64_t>(d.swizzle) << 62;
}

unsigned swizzle_span(WgmmaSwizzle swizzle) {
  switch (swizzle) {
    case WgmmaSwizzle::none:
      return 16;  // one core-matrix row: the unswizzled layouts' unit
    case WgmmaSwizzle::b128:
      return 128;
    case WgmmaSwizzle::b64:
      return 64;
    case WgmmaSwizzle::b32:
      break;
  }
  return 32;
}

std::uint32_t operand_address(const MatrixDescriptor& d, OperandMajor major,
                              std::size_t element_bytes, unsigned row, unsigned k) {
  const auto bytes = static_cast<std::uint32_t>(element_bytes);
  if (major == OperandMajor::k) {
    const std::uint32_t kb = k * bytes;  // along K, within the row
    if (d.swizzle == WgmmaSwizzle::none)
      return d.start + row % 8 * 16 + row / 8 * d.stride + kb / 16 * d.leading + kb % 16;
    const std::uint32_t a = d.start + row % 8 * swizzle_span(d.swizzle) + row / 8 * d.stride + kb;
    return swizzled(a, d.swizzle);
  }
  const std::uint32_t per_chunk = 16 / bytes;  // elements of M/N in 16 bytes
  const std::uint32_t in_chunk = row % per_chunk * bytes;
  if (d.swizzle == WgmmaSwizzle::none)
    return d.start + in_chunk + row / per_chunk * d.stride + k % 8 * 16 + k / 8 * d.leading;
  const unsigned w = chunks(d.swizzle);
  const std::uint32_t a = d.start + in_chunk + row / per_chunk % w * 16 +
                          row / (per_chunk * w) * d.leading + k % 8 * (16 * w) + k / 8 * d.stride;
  return swizzled(a, d.swizzle);
}

std::string unemulated_descriptor(const MatrixDescriptor& d, OperandMajor major,
                                  std::size_t element_bytes) {
  if (d.base_offset != 0)
    return fmt::format(
        "a matrix descriptor with base offset {} (the ISA leaves how it enters the swizzle "
        "vague): align the swizzle's pattern to its repeat and use 0",
        d.base_offset);
  if (major == OperandMajor::mn && element_bytes != 2)
    return "an MN-major (transposed) operand of 4-byte elements: wgmma transposes 16-bit types "
           "only";
  return {};
}

FragmentPosition accumulator_position(unsigned warp, unsigned lane, unsigned i) {
  return {16 * warp + lane / 4 + 8 * (i / 2 % 2), 8 * (i / 4) + 2 * (lane % 4) + i % 2};
}

FragmentPosition a16_position(unsigned warp, unsigned lane, unsigned i) {
  return {16 * warp + lane / 4 + 8 * (i / 2 % 2), 2 * (lane % 4) + i % 2 + 8 * (i / 4)};
}

FragmentPosition a_tf32_position(unsigned warp, unsigned lane, unsigned i) {
  return {16 * warp + lane / 4 + 8 * (i % 2), lane % 4 + 4 * (i / 2)};
}

}  // namespace convjit::emulator
