#include "dispatcher/tensor_maps/tensor_map_spec.hpp"

#include <fmt/format.h>

#include <cstdint>

namespace convjit {

namespace {

const char* encoder_name(const TensorMapSpec& spec) {
  return spec.mode == TensorMapMode::tiled ? "cuTensorMapEncodeTiled" : "cuTensorMapEncodeIm2col";
}

Status refuse(const TensorMapSpec& spec, const std::string& what) {
  return Status::invalid(fmt::format("tensor map ({}): {}", encoder_name(spec), what));
}

// The driver's limits on signed corner offsets by rank: 16, 8 and 5 bits.
int corner_limit(unsigned rank) { return rank == 3 ? 32768 : rank == 4 ? 128 : 16; }

Status check_rank_and_address(const TensorMapSpec& spec) {
  const unsigned low =
      spec.mode == TensorMapMode::im2col || spec.interleave != TensorMapInterleave::none ? 3 : 1;
  if (spec.rank < low || spec.rank > kTensorMapMaxRank)
    return refuse(spec,
                  fmt::format("rank {} is outside {} to {}{}", spec.rank, low, kTensorMapMaxRank,
                              low == 3 ? " (im2col and interleaved maps need 3 or more)" : ""));
  const std::size_t alignment = global_address_alignment(spec);
  const auto address = reinterpret_cast<std::uintptr_t>(spec.global_address);
  if (address == 0 || address % alignment != 0)
    return refuse(
        spec, fmt::format("global_address {} is {}: it must be {}-byte aligned",
                          spec.global_address, address == 0 ? "null" : "misaligned", alignment));
  return Status::ok();
}

Status check_dims_and_strides(const TensorMapSpec& spec) {
  for (unsigned d = 0; d < spec.rank; ++d)
    if (spec.dims[d] == 0 || spec.dims[d] > (std::uint64_t{1} << 32))
      return refuse(spec, fmt::format("dims[{}] = {} must be 1 to 2^32", d, spec.dims[d]));
  const std::uint64_t multiple = spec.interleave == TensorMapInterleave::b32 ? 32 : 16;
  for (unsigned d = 1; d < spec.rank; ++d) {
    const std::uint64_t stride = spec.strides[d - 1];
    if (stride % multiple != 0 || stride >= (std::uint64_t{1} << 40))
      return refuse(spec, fmt::format("the stride of dimension {} is {} bytes: it must be a "
                                      "multiple of {} below 2^40; pad the rows (a channel count "
                                      "of {} bytes' multiple)",
                                      d, stride, multiple, multiple));
  }
  for (unsigned d = 0; d < spec.rank; ++d)
    if (spec.element_strides[d] < 1 || spec.element_strides[d] > 8)
      return refuse(
          spec, fmt::format("element_strides[{}] = {} must be 1 to 8", d, spec.element_strides[d]));
  return Status::ok();
}

// The inner dimension of the box in shared memory: a multiple of 16 bytes
// without interleave, and within the swizzle's span.
Status check_row(const TensorMapSpec& spec, const char* field) {
  const std::size_t row = box_row_bytes(spec), span = swizzle_span(spec.swizzle);
  if (spec.interleave == TensorMapInterleave::b32 && spec.swizzle != TensorMapSwizzle::b32)
    return refuse(spec, "interleave 32B needs swizzle 32B");
  if (spec.interleave != TensorMapInterleave::none) return Status::ok();
  if (row % 16 != 0)
    return refuse(spec, fmt::format("{} ({} bytes) must be a multiple of 16 bytes", field, row));
  if (span != 0 && row > span)
    return refuse(spec, fmt::format("{} ({} bytes) exceeds the {}-byte swizzle: shrink the box or "
                                    "use a wider swizzle",
                                    field, row, span));
  return Status::ok();
}

Status check_tiled(const TensorMapSpec& spec) {
  for (unsigned d = 0; d < spec.rank; ++d)
    if (spec.box[d] < 1 || spec.box[d] > 256)
      return refuse(spec, fmt::format("box[{}] = {} must be 1 to 256", d, spec.box[d]));
  return check_row(spec, "the box's inner dimension, box[0] times the element size");
}

Status check_im2col(const TensorMapSpec& spec) {
  const unsigned spatial = spec.rank - 2;
  const int limit = corner_limit(spec.rank);
  for (unsigned s = 0; s < spatial; ++s) {
    for (const auto& [name, corner] : {std::pair{"lower_corner", &spec.lower_corner},
                                       std::pair{"upper_corner", &spec.upper_corner}})
      if ((*corner)[s] < -limit || (*corner)[s] >= limit)
        return refuse(spec, fmt::format("{}[{}] = {} must be within [{}, {}] for rank {}", name, s,
                                        (*corner)[s], -limit, limit - 1, spec.rank));
    const auto extent =
        static_cast<std::int64_t>(spec.dims[s + 1]) + spec.upper_corner[s] - spec.lower_corner[s];
    if (extent <= 0)
      return refuse(spec, fmt::format("the bounding box of spatial dimension {} is empty (dims[{}] "
                                      "= {}, corners {} and {})",
                                      s, s + 1, spec.dims[s + 1], spec.lower_corner[s],
                                      spec.upper_corner[s]));
  }
  if (spec.channels_per_pixel < 1 || spec.channels_per_pixel > 256)
    return refuse(spec,
                  fmt::format("channels_per_pixel = {} must be 1 to 256", spec.channels_per_pixel));
  if (spec.pixels_per_column < 1 || spec.pixels_per_column > 1024)
    return refuse(spec,
                  fmt::format("pixels_per_column = {} must be 1 to 1024", spec.pixels_per_column));
  return check_row(spec, "a pixel's channels, channels_per_pixel times the element size");
}

}  // namespace

std::size_t element_bytes(TensorMapElement element) {
  return element == TensorMapElement::f32 ? 4 : 2;
}

std::size_t swizzle_span(TensorMapSwizzle swizzle) {
  return swizzle == TensorMapSwizzle::none ? 0 : std::size_t{16} << static_cast<int>(swizzle);
}

TensorMapSwizzle row_span_swizzle(std::size_t row_bytes) {
  for (TensorMapSwizzle s : {TensorMapSwizzle::b32, TensorMapSwizzle::b64})
    if (swizzle_span(s) == row_bytes) return s;
  return TensorMapSwizzle::b128;
}

const char* tensor_map_element_name(TensorMapElement element) {
  switch (element) {
    case TensorMapElement::f32:
      return "f32";
    case TensorMapElement::f16:
      return "f16";
    case TensorMapElement::bf16:
      break;
  }
  return "bf16";
}

Status validate_tensor_map(const TensorMapSpec& spec) {
  if (static_cast<unsigned>(spec.swizzle) > 3 || static_cast<unsigned>(spec.interleave) > 2 ||
      spec.l2_promotion > 3)
    return refuse(spec, "swizzle, interleave or l2_promotion is not one of the driver's values");
  if (Status s = check_rank_and_address(spec); !s.is_ok()) return s;
  if (Status s = check_dims_and_strides(spec); !s.is_ok()) return s;
  return spec.mode == TensorMapMode::tiled ? check_tiled(spec) : check_im2col(spec);
}

std::uint32_t box_extent(const TensorMapSpec& spec, unsigned d) {
  const std::uint32_t step =
      d == 0 && spec.interleave == TensorMapInterleave::none ? 1 : spec.element_strides[d];
  return (spec.box[d] + step - 1) / step;
}

std::size_t box_row_bytes(const TensorMapSpec& spec) {
  const std::size_t elements =
      spec.mode == TensorMapMode::tiled ? box_extent(spec, 0) : spec.channels_per_pixel;
  return elements * element_bytes(spec.element);
}

std::size_t box_bytes(const TensorMapSpec& spec) {
  std::size_t bytes = box_row_bytes(spec);
  if (spec.mode == TensorMapMode::im2col) return bytes * spec.pixels_per_column;
  for (unsigned d = 1; d < spec.rank; ++d) bytes *= box_extent(spec, d);
  return bytes;
}

std::size_t global_address_alignment(const TensorMapSpec& spec) {
  return spec.interleave == TensorMapInterleave::b32 ? 32 : 16;
}

int im2col_offset_limit(unsigned rank) { return 2 * corner_limit(rank); }

}  // namespace convjit
