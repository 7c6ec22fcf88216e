#include "dispatcher/backends/jit/pixel_filters.hpp"

#include <fmt/format.h>

#include "dispatcher/backends/jit/bwddata_as_forward.hpp"
#include "dispatcher/backends/jit/ceil_div.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/descriptor/canonical_layout.hpp"
#include "kernel_templates/conv/pixel_filters_shape.cuh"

namespace convjit {

namespace {

constexpr long long kRows = CONVJIT_PIXELS_TILE_ROWS, kCols = CONVJIT_PIXELS_TILE_COLS;
constexpr long long kTapFilters = CONVJIT_PIXELS_TAP_ALIGNMENT;
static_assert(kRows * kCols / CONVJIT_PIXELS_STRIP == kJitThreadsPerBlock,
              "a thread per strip of the tile");

View5 filter_view(const OpDescriptor& d) {
  return canonical_view(d.w_dims, d.w_strides, d.spatial_dims);
}

// The filters as the kernel stages them: C x taps x K rounded up to whole reads.
long long staged_weights(const View5& w) {
  return w.dims[1] * w.spatial_size() * ceil_div(w.dims[0], kTapFilters) * kTapFilters;
}

// The input a tile of output pixels reads, every channel.
long long staged_halo(const OpDescriptor& d, const View5& w) {
  const Window3 win = canonical_window(d);
  const auto extent = [&](long long outputs, std::size_t a) {
    return (outputs - 1) * win.stride[a] + (win.size[a] - 1) * win.dilation[a] + 1;
  };
  return w.dims[1] * extent(1, 0) * extent(kRows, 1) * extent(kCols, 2);
}

}  // namespace

OpDescriptor pixel_filters_problem(const OpDescriptor& d) {
  return unit_stride_bwddata(d) ? bwddata_as_forward(d) : d;
}

Status pixel_filters_support(const OpDescriptor& d) {
  const auto refuse = [](std::string_view why) {
    return Status::not_available(fmt::format("variant {} {}", kPixelsVariant, why));
  };
  if (d.kind != OpKind::conv || (d.direction != Direction::fwd && !unit_stride_bwddata(d)))
    return refuse(
        d.direction == Direction::bwddata
            ? "serves the bwddata of unit strides only (the forward conv of dy): use direct or "
              "a GEMM tile"
            : "serves conv fwd and the bwddata of unit strides only");
  if (d.groups != 1)
    return refuse(
        fmt::format("serves convs of one group; this one has {}: use direct, or "
                    "depthwise for groups = C",
                    d.groups));
  if (d.dtype == DataType::f64)
    return refuse("accumulates in f32, which f64 does not allow: use direct");
  if (const std::size_t bytes = pixel_filter_shared_bytes(d);
      bytes > CONVJIT_PIXELS_MAX_SHARED_BYTES)
    return refuse(fmt::format(
        "keeps the filters and a tile's input (C x taps x K, and C x the {} x {} output pixels' "
        "window, in f32) in {} bytes of shared memory at most; this conv's take {}: use direct "
        "or a GEMM tile",
        kRows, kCols, CONVJIT_PIXELS_MAX_SHARED_BYTES, bytes));
  return Status::ok();
}

bool pixel_filters_lead(const OpDescriptor& desc) {
  const OpDescriptor d = pixel_filters_problem(desc);
  constexpr long long kMaxReduction = 144;  // C x taps: YOLO11n's 3 x 3 convs of 16 channels
  const View5 w = filter_view(d);
  const View5 y = canonical_view(d.y_dims, d.y_strides, d.spatial_dims);
  return w.dims[0] <= CONVJIT_PIXELS_FILTERS && w.dims[1] * w.spatial_size() <= kMaxReduction &&
         y.dims[3] >= kRows;
}

long long pixel_filter_items(const OpDescriptor& desc) {
  const OpDescriptor d = pixel_filters_problem(desc);
  const View5 y = canonical_view(d.y_dims, d.y_strides, d.spatial_dims);
  return y.dims[0] * y.dims[2] * ceil_div(y.dims[3], kRows) * ceil_div(y.dims[4], kCols) *
         kJitThreadsPerBlock;
}

std::size_t pixel_filter_shared_bytes(const OpDescriptor& desc) {
  const OpDescriptor d = pixel_filters_problem(desc);
  const View5 w = filter_view(d);
  return static_cast<std::size_t>(staged_weights(w) + staged_halo(d, w)) * sizeof(float);
}

}  // namespace convjit
