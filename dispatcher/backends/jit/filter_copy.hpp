// The first pass that copies w into the order in which a GEMM's B operand
// reads it (kernel_templates/conv/packed_filters.cuh, convjit_kernel_prepare).
#pragma once

#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/descriptor/canonical_layout.hpp"
#include "dispatcher/descriptor/dtype.hpp"

namespace convjit {

// The copy's order: a filter's taps of channels (forward), or a
// channel's taps of its group's filters (backward data).
enum class FilterCopyOrder : unsigned char { forward, backward_data };

// Its launch for the filters `w` (the canonical view of the Problem's, of
// `groups` groups), as the template decides it:
//   - a block per tile (kernel_templates/conv/filter_tile_shape.cuh),
//     all taps, through shared memory, where w's taps are contiguous
//     (K C T R S), at most 48, and a row's or a run element's step
//     through w is the taps (copies_tiles);
//   - else a thread per 16-byte chunk of the copy where its runs (a tap's
//     channels, a group's filters) are whole chunks;
//   - else a thread per weight.
[[nodiscard]] KernelEntry filter_copy_entry(const View5& w, FilterCopyOrder order, long long groups,
                                            DataType dtype);

}  // namespace convjit
