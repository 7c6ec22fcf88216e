#include "dispatcher/backends/emulator/bulk_tensor_box.hpp"

#include <fmt/format.h>

#include <array>

namespace convjit::emulator {

namespace {

// log2 of the span's 16-byte chunks: 1, 2, 3 for 32, 64, 128 bytes.
unsigned swizzle_bits(TensorMapSwizzle swizzle) { return static_cast<unsigned>(swizzle); }

// The global address of the element at `g` (rank coordinates), or null
// when one lies outside the tensor.
const std::byte* element_address(const TensorMapSpec& spec,
                                 const std::array<std::int64_t, kTensorMapMaxRank>& g) {
  const auto* base = static_cast<const std::byte*>(spec.global_address);
  std::int64_t offset = 0;
  for (unsigned d = 0; d < spec.rank; ++d) {
    if (g[d] < 0 || g[d] >= static_cast<std::int64_t>(spec.dims[d])) return nullptr;
    const auto stride = d == 0 ? static_cast<std::int64_t>(element_bytes(spec.element))
                               : static_cast<std::int64_t>(spec.strides[d - 1]);
    offset += g[d] * stride;
  }
  return base + offset;
}

}  // namespace

std::size_t swizzled_offset(std::size_t offset, TensorMapSwizzle swizzle) {
  const unsigned bits = swizzle_bits(swizzle);
  if (bits == 0) return offset;
  const std::size_t mask = (std::size_t{1} << bits) - 1;
  return offset ^ (((offset >> 7) & mask) << 4);
}

std::size_t swizzle_repeat(TensorMapSwizzle swizzle) {
  return swizzle == TensorMapSwizzle::none ? 16 : 8 * swizzle_span(swizzle);
}

BoxElements tiled_box(const TensorMapSpec& spec, std::span<const int> coords) {
  std::array<std::uint32_t, kTensorMapMaxRank> extent{1, 1, 1, 1, 1};
  std::size_t count = 1;
  for (unsigned d = 0; d < spec.rank; ++d) count *= extent[d] = box_extent(spec, d);
  BoxElements box(count);
  std::array<std::uint32_t, kTensorMapMaxRank> at{};  // the element's index in the box
  for (std::size_t i = 0; i < count; ++i) {
    std::array<std::int64_t, kTensorMapMaxRank> g{};
    for (unsigned d = 0; d < spec.rank; ++d) {
      const std::uint32_t step =
          d == 0 && spec.interleave == TensorMapInterleave::none ? 1 : spec.element_strides[d];
      g[d] = static_cast<std::int64_t>(coords[d]) + static_cast<std::int64_t>(at[d]) * step;
    }
    box[i] = element_address(spec, g);
    for (unsigned d = 0; d < spec.rank && ++at[d] == extent[d]; ++d) at[d] = 0;
  }
  return box;
}

std::string im2col_coordinate_problem(const TensorMapSpec& spec, std::span<const int> coords,
                                      std::span<const int> offsets) {
  const unsigned spatial = spec.rank - 2;
  const int offset_limit = im2col_offset_limit(spec.rank);
  for (unsigned s = 0; s < spatial; ++s) {
    if (offsets[s] < 0 || offsets[s] >= offset_limit)
      return fmt::format("im2col offset {} is {}: it must be 0 to {} for rank {}", s, offsets[s],
                         offset_limit - 1, spec.rank);
    const std::int64_t low = spec.lower_corner[s];
    const std::int64_t high =
        static_cast<std::int64_t>(spec.dims[s + 1]) - 1 + spec.upper_corner[s];
    if (coords[s + 1] < low || coords[s + 1] > high)
      return fmt::format(
          "the filter base's coordinate {} ({}) lies outside the bounding box [{}, {}] of the "
          "tensor map's corners: start each column inside the box",
          s + 1, coords[s + 1], low, high);
  }
  return {};
}

BoxElements im2col_box(const TensorMapSpec& spec, std::span<const int> coords,
                       std::span<const int> offsets) {
  const unsigned spatial = spec.rank - 2, batch = spec.rank - 1;
  const std::size_t channels = spec.channels_per_pixel;
  std::array<std::int64_t, kIm2colMaxSpatialRank> base{};  // the pixel's filter base
  for (unsigned s = 0; s < spatial; ++s) base[s] = coords[s + 1];
  std::int64_t n = coords[batch];
  BoxElements box(spec.pixels_per_column * channels);
  for (std::size_t p = 0; p < spec.pixels_per_column; ++p) {
    std::array<std::int64_t, kTensorMapMaxRank> g{};
    for (unsigned s = 0; s < spatial; ++s) g[s + 1] = base[s] + offsets[s];
    g[batch] = n;
    for (std::size_t c = 0; c < channels; ++c) {
      g[0] = coords[0] + static_cast<std::int64_t>(c);
      box[p * channels + c] = element_address(spec, g);
    }
    // The next pixel: W steps by its traversal stride, wrapping at the
    // box's upper end to its lower one and carrying into H, D, then N.
    unsigned s = 0;
    for (; s < spatial; ++s) {
      base[s] += spec.element_strides[s + 1];
      if (base[s] <= static_cast<std::int64_t>(spec.dims[s + 1]) - 1 + spec.upper_corner[s]) break;
      base[s] = spec.lower_corner[s];
    }
    if (s == spatial) ++n;
  }
  return box;
}

}  // namespace convjit::emulator
