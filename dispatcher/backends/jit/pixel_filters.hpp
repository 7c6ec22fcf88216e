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
// all of them) over a reduction of at most 144 (C x taps, the widest
// phase's where phased: YOLO11n's 3 x 3 convs of 16 channels), with 8
// output rows (of a phase) or more (a tile's; a 1D conv would leave 7 of
// 8 threads idle).  The analyser predicted it 0.18-0.23x auto's previous
// choice on YOLO11n's stem and its 3 x 3 convs of 16 channels to 8
// filters and 8 to 16 at batch 32 on the H200, channels-last and NCHW;
// on its convs of 32 filters it tied the tiles
// (bench/results/2026-12-03-pixel-filters).  On the bwddata of those two
// 0.15-0.16x, of b1's stride-2 conv 0.86x the Hopper conv's, and on
// b4's of 32 filters of dx a tie with the tiles, where it does not lead
// (bench/results/2026-12-04-pixel-filters-bwddata).
[[nodiscard]] bool pixel_filters_lead(const OpDescriptor& d);

// The kernel's launch: a block of threads per tile of output pixels
// (conv/pixel_filters_shape.cuh), and a block's dynamic shared memory,
// the filters and a tile's input halo in f32.
[[nodiscard]] long long pixel_filter_items(const OpDescriptor& d);
[[nodiscard]] std::size_t pixel_filter_shared_bytes(const OpDescriptor& d);

}  // namespace convjit
