// The first pass that copies w into the order in which a GEMM's B operand
// reads it (kernel_templates/conv/packed_filters.cuh, convjit_kernel_prepare).
#pragma once

#include "dispatcher/descriptor/dtype.hpp"

namespace convjit {

// Its threads: one per 16-byte chunk of the copy where the copy's runs
// (`run` elements that step through w by one stride: a tap's channels in
// the forward order, a group's filters in the backward-data order) are
// whole chunks, as the template decides; else one per weight.
[[nodiscard]] inline long long filter_copy_threads(long long weights, long long run,
                                                   DataType dtype) {
  const long long chunk = 16 / static_cast<long long>(element_size(dtype));
  return run % chunk == 0 ? weights / chunk : weights;
}

}  // namespace convjit
