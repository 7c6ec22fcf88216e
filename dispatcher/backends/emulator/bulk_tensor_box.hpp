// The elements one TMA copy (cp.async.bulk.tensor) moves, as the PTX ISA
// defines them ("Tensor Data Movement": tiled and im2col modes): for each
// element of the box in shared-memory order (packed, before the swizzle),
// its global address, or null where the element lies outside the tensor
// (a load fills it, a store skips it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "dispatcher/tensor_maps/tensor_map_spec.hpp"

namespace convjit::emulator {

using BoxElements = std::vector<const std::byte*>;

// The swizzle of a shared address (PTX ISA "Tensor Swizzling Modes"; the
// absolute address, so an offset from a base aligned to the repeat below
// swizzles alike): the 16-byte chunk index within a span-sized row XORed
// with the row's index within the repeat, bits [4, 4+b) ^ [7, 7+b) with
// b = 1, 2, 3 for 32, 64, 128 bytes.
[[nodiscard]] std::size_t swizzled_offset(std::size_t offset, TensorMapSwizzle swizzle);
// The alignment a swizzled box's shared address needs for the pattern to
// start at its first row: 256, 512 or 1024 bytes (16 without a swizzle).
[[nodiscard]] std::size_t swizzle_repeat(TensorMapSwizzle swizzle);

// A tiled copy at `coords` (spec.rank of them, dimension 0 first).
[[nodiscard]] BoxElements tiled_box(const TensorMapSpec& spec, std::span<const int> coords);

// An im2col copy: `coords` are (c, w[, h[, d]], n), with w, h, d the
// first pixel's filter base, inside the bounding box [lower corner,
// extent - 1 + upper corner] per spatial dimension; `offsets` (w[, h[, d]],
// rank - 2 of them) the filter tap added to each pixel's base.  Pixels
// follow W, then H, D and N, each spatial step the traversal stride.
// What makes the coordinates undefined for the ISA, or empty:
[[nodiscard]] std::string im2col_coordinate_problem(const TensorMapSpec& spec,
                                                    std::span<const int> coords,
                                                    std::span<const int> offsets);
[[nodiscard]] BoxElements im2col_box(const TensorMapSpec& spec, std::span<const int> coords,
                                     std::span<const int> offsets);

}  // namespace convjit::emulator
