#include "dispatcher/backends/jit/wgmma_store_map.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "kernel_templates/conv/wgmma_conv_shape.cuh"

namespace convjit {

namespace {

constexpr long long kYElementBytes = 2;  // f16, bf16
constexpr long long kStoreConsumerPixels = CONVJIT_WGMMA_PIXELS;
constexpr long long kStoreBoxFilters = CONVJIT_WGMMA_CHANNELS;  // a 128-byte row
constexpr long long kStorePiece = CONVJIT_WGMMA_STORE_PIECE;

// The slots a consumer whose anchors start at `first` along the widened
// row takes: StoreRows's, each row the row's anchors rounded up to whole
// pieces apart from the first row's first piece, every anchor staged; and
// a whole piece's 8 slots, as TMA reads them.
long long consumer_slots(long long pixels, long long anchors, long long first) {
  const long long row_slots = (anchors + kStorePiece - 1) / kStorePiece * kStorePiece;
  const long long lead = first / kStorePiece * kStorePiece;
  const long long end = first + kStoreConsumerPixels, last_row = (end - 1) / anchors;
  long long slots = 0;
  for (long long m = first; m < end; ++m) {
    const long long row = m / anchors, w = m % anchors, piece = w / kStorePiece * kStorePiece;
    const long long begin = row == 0 ? first : 0;
    const long long stop = row == last_row ? (end - 1) % anchors + 1 : anchors;
    const bool whole =
        w < pixels && piece >= begin && std::min(piece + kStorePiece, pixels) <= stop;
    slots = std::max(slots, row * row_slots - lead + (whole ? piece + kStorePiece : w + 1));
  }
  return slots;
}

}  // namespace

long long pixel_row_stride(const View5& y) {
  if (y.strides[1] != 1) return 0;
  long long row = 0, pixels = 1;
  for (const std::size_t a : {4, 3, 2, 0}) {  // W, H, D, N
    if (y.dims[a] == 1) continue;
    if (row == 0)
      row = y.strides[a];
    else if (y.strides[a] != row * pixels)
      return 0;
    pixels *= y.dims[a];
  }
  if (row == 0) return y.dims[1];
  return row >= y.dims[1] ? row : 0;
}

long long row_store_slots(long long pixels, long long anchors) {
  // A consumer starts where a multiple of its 128 anchors falls along the
  // row: at most `anchors` places, whose slots repeat from there.
  long long slots = 0;
  for (long long k = 0; k < anchors; ++k)
    slots = std::max(slots, consumer_slots(pixels, anchors, k * kStoreConsumerPixels % anchors));
  return slots;
}

std::optional<TensorMapSpec> store_map(TensorMapElement element, const View5& y, long long filters,
                                       long long reach) {
  const long long row_stride = pixel_row_stride(y);
  const long long pixels = y.dims[0] * y.spatial_size(), width = y.dims[4];
  constexpr long long kMaxCoordinate = std::numeric_limits<std::int32_t>::max();
  if (row_stride == 0 || pixels > kMaxCoordinate) return std::nullopt;
  if (reach > 0 && row_store_slots(width, width + reach) > CONVJIT_WGMMA_ROW_STORE_SLOTS)
    return std::nullopt;
  const long long box_filters = std::min(filters, kStoreBoxFilters);
  TensorMapSpec s;
  s.element = element;
  s.dims[0] = static_cast<std::uint64_t>(y.dims[1]);
  s.strides[0] = static_cast<std::uint64_t>(row_stride * kYElementBytes);
  if (reach == 0) {
    s.rank = 2;
    s.dims[1] = static_cast<std::uint64_t>(pixels);
    s.box = {static_cast<std::uint32_t>(box_filters),
             static_cast<std::uint32_t>(kStoreConsumerPixels)};
  } else {
    s.rank = 3;
    s.dims[1] = static_cast<std::uint64_t>(width);
    s.dims[2] = static_cast<std::uint64_t>(pixels / width);
    s.strides[1] = static_cast<std::uint64_t>(width * row_stride * kYElementBytes);
    s.box = {static_cast<std::uint32_t>(box_filters), static_cast<std::uint32_t>(kStorePiece), 1};
  }
  s.swizzle = row_span_swizzle(static_cast<std::size_t>(box_filters * kYElementBytes));
  return s;
}

}  // namespace convjit
