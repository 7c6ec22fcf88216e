// The host side of the conv of short reductions over few filters
// (kernel_templates/conv/conv_pixels.cuh): a thread computes a strip
// of output pixels by a group of filters, all of w in a block's shared
// memory.  Where it applies, its launch, and where the auto policy leads
// with it.
#pragma once

#include <cstddef>
#include <string_view>

#include "convjit/status.hpp"
#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit {

inline constexpr std::string_view kPixelsVariant = "pixels";

// The conv the kernel runs for `d`, whose constants it takes: `d`; a
// bwddata of unit strides' forward conv (bwddata_as_forward.hpp, its
// filters read flipped); or a strided bwddata's operands as a forward
// conv's, with its own window, whose stride phases it runs
// (pixel_filters_phased).  The functions below take `d` itself.
[[nodiscard]] OpDescriptor pixel_filters_problem(const OpDescriptor& d);

// Whether the kernel runs `d` by stride phases (conv/conv_pixels.cuh's
// PHASED): a strided bwddata.
[[nodiscard]] bool pixel_filters_phased(const OpDescriptor& d);

// OK where the kernel serves `d`: a conv fwd or bwddata of one group in
// f32, f16 or bf16 whose filters (C x taps x K of its problem, K rounded
// up to 4) and a tile's input halo (C x the window of 8 x 64 output
// pixels, of one phase where phased) fit the block's shared memory in
// f32 (CONVJIT_PIXELS_MAX_SHARED_BYTES); else NOT_AVAILABLE naming the
// rule it breaks.
[[nodiscard]] Status pixel_filters_support(const OpDescriptor& d);

// Whether the auto policy leads with it (else it is offered last), for a
// `d` that pixel_filters_support serves, by its problem: a conv of 16
// filters or fewer (a thread's group: every halo value it reads feeds
// all of them) over a reduction of at most 96 (C x taps), with 8 output
// rows or more (a tile's; a 1D conv would leave 7 of 8 threads idle),
// and not by stride phases.  As an H200 timed it (bf16, channels-last,
// batch 32: bench/results/2026-12-04-h200) against every other variant
// on YOLO11n: it won on reductions of 27 and 72 (the stem's fwd 0.83x,
// fused 0.59x; b2.c3k2.m.cv2's fwd 0.87x; b2.c3k2.m.cv1's bwddata 0.74x)
// and lost on 144 (b2.c3k2.m.cv1's fwd 1.17x, b2.c3k2.m.cv2's bwddata
// 1.20x), where the analyser had predicted it 0.2x
// (bench/results/2026-12-03-pixel-filters).  By phases it lost 4.6x on
// b1's stride-2 bwddata, predicted 0.86x.
[[nodiscard]] bool pixel_filters_lead(const OpDescriptor& d);

// The kernel's launch: a block of threads per tile of output pixels
// (conv/pixel_filters_shape.cuh), and a block's dynamic shared memory,
// the filters and a tile's input halo in f32.
[[nodiscard]] long long pixel_filter_items(const OpDescriptor& d);
[[nodiscard]] std::size_t pixel_filter_shared_bytes(const OpDescriptor& d);

}  // namespace convjit
