// The part of a convolution's input its windows reach: along each spatial
// axis, the positions some output's tap lands on.  A 1 x 1 conv of stride
// 2 reaches one in two of x's columns and of its rows; a window at least
// as wide as its stride reaches all of them.  Its roofline moves
// only that part (analysis/op_roofline.hpp), and no kernel of it touches
// more of x (the analyser's DRAM footprint, emulator_backend.cpp).
#pragma once

#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit {

// The share of x's elements a conv fwd or bwdfilt reads, in (0, 1]; a
// bwddata's, 1 (it writes every one of dx).  Not a conv: 1.
[[nodiscard]] double window_reach_fraction(const OpDescriptor& d);

}  // namespace convjit
