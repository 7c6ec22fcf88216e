// The map the Hopper conv stores y through by TMA (Problem::TMA_STORE:
// kernel_templates/conv/wgmma_conv_tile.cuh's store_by_tma), where y's
// pixels are rows of one stride: a consumer's 128 pixels a box, or with
// row taps, whose anchors run over output rows widened by the window's
// reach, a piece of 8 pixels of one row a box, each row of a consumer's
// anchors staged from a slot of its own (StoreRows there).
#pragma once

#include <optional>

#include "dispatcher/descriptor/canonical_layout.hpp"
#include "dispatcher/tensor_maps/tensor_map_spec.hpp"

namespace convjit {

// The stride of y's pixels where they are rows of one stride, channels
// contiguous in each (every pixel dimension steps by the one inside it
// times that one's extent; a dimension of one pixel is never stepped, so
// any stride serves it), else 0.  A single pixel's row is its channels.
[[nodiscard]] long long pixel_row_stride(const View5& y);

// The most slots a row-tap consumer's 128 anchors take (staged rows,
// as StoreRows counts them, and the pieces TMA reads from them), over
// every place a consumer starts along a widened row of `anchors`, of
// which the first `pixels` are y's.
[[nodiscard]] long long row_store_slots(long long pixels, long long anchors);

// y (canonical) as (filters, pixels) in boxes of a consumer's N filters
// (`filters`, 64 a box at most) by its 128 pixels; with row taps
// (`reach` > 0: each output row's anchors widened by so many), as
// (filters, W, rows) in boxes of a piece.  None where y's pixels are no
// rows of one stride, a coordinate would pass 32 bits, or a row-tap
// consumer's rows would take more slots than the template stages; the
// caller checks the map against TMA's rules.
[[nodiscard]] std::optional<TensorMapSpec> store_map(TensorMapElement element, const View5& y,
                                                     long long filters, long long reach);

}  // namespace convjit
