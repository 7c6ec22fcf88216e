#include "dispatcher/backends/jit/filter_copy.hpp"

#include "dispatcher/backends/jit/ceil_div.hpp"
#include "kernel_templates/conv/filter_tile_shape.cuh"

namespace convjit {

namespace {

// The copy's rows and runs, and their steps through w.
struct CopyShape {
  long long rows, run, row_stride, run_stride;
  bool tiled;  // one stride reaches every row
};

CopyShape copy_shape(const View5& w, FilterCopyOrder order, long long groups) {
  if (order == FilterCopyOrder::forward)
    return {w.dims[0], w.dims[1], w.strides[0], w.strides[1], true};
  return {groups * w.dims[1], w.dims[0] / groups, w.strides[1], w.strides[0], groups == 1};
}

bool taps_contiguous(const View5& w) {
  return (w.dims[4] == 1 || w.strides[4] == 1) && (w.dims[3] == 1 || w.strides[3] == w.dims[4]) &&
         (w.dims[2] == 1 || w.strides[2] == w.dims[3] * w.dims[4]);
}

}  // namespace

KernelEntry filter_copy_entry(const View5& w, FilterCopyOrder order, long long groups,
                              DataType dtype) {
  const long long element = static_cast<long long>(element_size(dtype)), chunk = 16 / element;
  const long long taps = w.spatial_size(), weights = w.dims[0] * w.dims[1] * taps;
  const CopyShape s = copy_shape(w, order, groups);
  if (element <= 4 && s.tiled && taps_contiguous(w) && s.run % chunk == 0 &&
      taps <= CONVJIT_FILTER_TILE_MAX_TAPS && (s.row_stride == taps || s.run_stride == taps)) {
    const bool rows_inner = s.row_stride == taps, wide = CONVJIT_FILTER_TILE_WIDE(s.rows * s.run);
    const long long blocks = ceil_div(s.rows, CONVJIT_FILTER_TILE_ROWS(rows_inner, wide)) *
                             ceil_div(s.run, CONVJIT_FILTER_TILE_RUN(rows_inner, wide));
    return {.name = "convjit_kernel_prepare",
            .threads = blocks * kJitThreadsPerBlock,
            .tiles = blocks,
            .copies_filters = true};
  }
  return {.name = "convjit_kernel_prepare",
          .threads = s.run % chunk == 0 ? weights / chunk : weights,
          .copies_filters = true};
}

}  // namespace convjit
