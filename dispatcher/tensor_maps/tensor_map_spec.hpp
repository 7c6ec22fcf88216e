// What cuTensorMapEncodeTiled and cuTensorMapEncodeIm2col take (CUDA driver
// API, "Tensor Map Object Management"), as one value.  The JIT encodes it
// with the driver for a GPU launch (tensor_map_encoder.hpp); the emulator,
// which has no driver, keeps it as its tensor map.  validate_tensor_map()
// applies the driver's documented rules, so that both refuse the same
// maps, and says which field breaks which rule.
//
// Arrays are in the driver's order: dimension 0 is the innermost
// (contiguous) one.  A TMA copy moves a box of elements between the
// tensor and shared memory, packed with dimension 0 innermost; im2col mode
// moves `pixels_per_column` pixels of `channels_per_pixel` channels each.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "convjit/status.hpp"

namespace convjit {

enum class TensorMapMode : std::uint8_t { tiled, im2col };

// The data types convjit's kernels move; the driver's FLOAT32, FLOAT16 and
// BFLOAT16 (tensor_map_encoder.cpp maps them).
enum class TensorMapElement : std::uint8_t { f32, f16, bf16 };

// The values are CUtensorMapSwizzle's and CUtensorMapInterleave's.  The
// 128B_ATOM swizzles of later architectures are left out.
enum class TensorMapSwizzle : std::uint8_t { none = 0, b32 = 1, b64 = 2, b128 = 3 };
enum class TensorMapInterleave : std::uint8_t { none = 0, b16 = 1, b32 = 2 };

inline constexpr unsigned kTensorMapMaxRank = 5;
inline constexpr unsigned kIm2colMaxSpatialRank = kTensorMapMaxRank - 2;

struct TensorMapSpec {
  TensorMapMode mode = TensorMapMode::tiled;
  TensorMapElement element = TensorMapElement::f32;
  unsigned rank = 1;
  const void* global_address = nullptr;
  std::array<std::uint64_t, kTensorMapMaxRank> dims{};         // elements
  std::array<std::uint64_t, kTensorMapMaxRank - 1> strides{};  // bytes, of dimensions 1 to rank-1
  std::array<std::uint32_t, kTensorMapMaxRank> box{};          // tiled: elements traversed
  // The traversal step per dimension (1 to 8); a tiled load moves
  // ceil(box / step) elements along a dimension.  Dimension 0's is ignored
  // without interleave, as the driver ignores it.
  std::array<std::uint32_t, kTensorMapMaxRank> element_strides{1, 1, 1, 1, 1};
  // im2col: the bounding box of the pixels' anchors per spatial dimension
  // (W, H, D: dimensions 1 to rank-2), from the tensor's first pixel
  // (lower) and from its last (upper).
  std::array<int, kIm2colMaxSpatialRank> lower_corner{};
  std::array<int, kIm2colMaxSpatialRank> upper_corner{};
  std::uint32_t channels_per_pixel = 0;
  std::uint32_t pixels_per_column = 0;
  TensorMapInterleave interleave = TensorMapInterleave::none;
  TensorMapSwizzle swizzle = TensorMapSwizzle::none;
  // CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA: out-of-bounds
  // elements read as NaN instead of zero.
  bool nan_fill = false;
  unsigned l2_promotion = 0;  // CUtensorMapL2promotion: a hint, passed to the driver only
};

[[nodiscard]] std::size_t element_bytes(TensorMapElement element);
// 0 (none), 32, 64 or 128.
[[nodiscard]] std::size_t swizzle_span(TensorMapSwizzle swizzle);
// The swizzle whose span is a box row of `row_bytes`: 32 or 64 bytes,
// else the 128-byte one.
[[nodiscard]] TensorMapSwizzle row_span_swizzle(std::size_t row_bytes);
[[nodiscard]] const char* tensor_map_element_name(TensorMapElement element);

// OK, or INVALID_ARGUMENT naming the field, its value and the rule it
// breaks, with the fix.
[[nodiscard]] Status validate_tensor_map(const TensorMapSpec& spec);

// The alignment the map's global address needs: 16 bytes, 32 interleaved.
[[nodiscard]] std::size_t global_address_alignment(const TensorMapSpec& spec);
// An im2col copy's filter offsets are 0 to this, exclusive, by the map's
// rank: 16, 8 and 5 bits for ranks 3, 4 and 5.
[[nodiscard]] int im2col_offset_limit(unsigned rank);

// The elements a load moves along dimension `d` of a tiled map.
[[nodiscard]] std::uint32_t box_extent(const TensorMapSpec& spec, unsigned d);
// The bytes one copy moves, out-of-bounds fill included: what an
// mbarrier's transaction count expects for it.
[[nodiscard]] std::size_t box_bytes(const TensorMapSpec& spec);
// The bytes of one row of the box in shared memory (dimension 0's extent,
// or one pixel's channels): the unit the swizzle permutes within.
[[nodiscard]] std::size_t box_row_bytes(const TensorMapSpec& spec);

}  // namespace convjit
