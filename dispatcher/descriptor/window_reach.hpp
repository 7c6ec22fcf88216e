// The part of a convolution's input its windows reach: along each spatial
// axis, the output's positions times the taps' distinct offsets within one
// stride (t dilation mod stride), at most the axis.  A 1 x 1 conv of
// stride 2 reaches one in two of x's columns and of its rows; a window at
// least as wide as its stride reaches all of them.  Its roofline moves
// only that part (analysis/op_roofline.hpp), and no kernel of it touches
// more of x (the analyser's DRAM footprint, emulator_backend.cpp).
#pragma once

#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit {

// The elements of x a conv fwd or bwdfilt reads; a bwddata's, all of dx
// (it writes every one).  Not a conv: all of x.
[[nodiscard]] double window_reach_elements(const OpDescriptor& d);

}  // namespace convjit
