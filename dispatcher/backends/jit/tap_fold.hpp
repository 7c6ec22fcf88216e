// The Hopper conv's way into convs whose channels TMA cannot map: a stem's
// 3 channels are 6-byte pixels, where TMA's strides are 16-byte
// multiples, and its 7 x 7 window leaves the Ampere tiles gathering 147
// elements a pixel one by one.  The conv's horizontal taps are folded
// into its channels: a first pass (kernel_templates/conv/folded_taps.cuh)
// writes, channels-last into the workspace,
//   x'[n, d, h, ow, s C + c] = x[n, c, d, h, ow SW - PW + s DW]
// (zero outside x, and in the channels past S C up to C', S C rounded up
// to 8), and w'[k, t, r, s C + c] = w[k, c, t, r, s].  The conv of x' and
// w' with one tap along W (stride 1, dilation 1, no padding) is the conv:
// ResNet-50's stem runs as 7 K steps of 24 channels.  x' is C'/C x OW/W
// times x: 4x for the stem, read once by TMA.  A bwdfilt folds the same
// way: its blocks compute dw' (the folded conv's filter gradient, as f32
// partial sums after x') and its second pass unfolds it,
//   dw[k, c, t, r, s] = dw'[k, t, r, s C + c].
// Unfolded, the Ampere tiles took 0.91 ms for ResNet-50's stem bwdfilt
// on the H200 (batch 32), 46% of all its bwdfilt convs' time, and 1.69
// ms for YOLO11n's (bench/results/2026-12-04-h200).  A bwdfilt of 8 or
// 16 channels folds too (TMA maps them, but each tap then fills a block
// of 64 columns): YOLO11n's b2.c3k2.m convs.
#pragma once

#include <cstddef>

#include "convjit/status.hpp"
#include "dispatcher/descriptor/canonical_layout.hpp"
#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit {

// Whether the Hopper conv folds `d`'s taps: a conv fwd or bwdfilt of one
// group, f16 or bf16, whose row of taps fits one K step (S C at most 64),
// with x' and w' within 1 GiB of workspace (tap_fold_fits), and whose
// channels are no whole 16-byte chunk (C not a multiple of 8), or a
// bwdfilt's of stride 1 with x channels-last and S > 1.  Wider rows would
// pay the fold's S-fold copy of x where padding C to 8 would do.
[[nodiscard]] bool folds_taps(const OpDescriptor& d);

// NOT_AVAILABLE where `d` would fold its taps but x' and w' would take
// more than 1 GiB of workspace (kDefaultCudnnWorkspaceLimitMib: what a
// cuDNN algorithm may take by default): YOLO11n's stem at batch 32 takes
// 210 MB; OK otherwise.
[[nodiscard]] Status tap_fold_fits(const OpDescriptor& d);

// The conv of x' and w' (above) for a `d` that folds its taps: x and w
// channels-last and packed (w' K T R S C), C' channels, W = OW, S = 1.
[[nodiscard]] OpDescriptor folded_conv(const OpDescriptor& d);

// Where the first pass puts x' and w' in the workspace, and its size.
struct TapFoldLayout {
  long long channels = 0;           // C'
  long long pixels = 0;             // x' in pixels (C' channels each)
  long long weights = 0;            // w' in elements: a fwd's first pass writes one a thread
  long long first_pass_items = 0;   // its threads: x''s pixels and a fwd's w''s weights,
                                    // which loop over x''s 16-byte chunks and the weights
  std::size_t filters_offset = 0;   // w' (a bwdfilt: dw's partial sums), in bytes: after x',
                                    // 256-byte aligned
  std::size_t workspace_bytes = 0;  // x' and a fwd's w'
};
[[nodiscard]] TapFoldLayout tap_fold_layout(const OpDescriptor& d);

}  // namespace convjit
