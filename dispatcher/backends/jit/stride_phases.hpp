// The stride phases of a strided conv's bwddata, as the Hopper conv runs
// them (kernel_templates/conv/conv_bwddata_wgmma.cuh, which derives the
// same on the device): along an axis of stride s, pad p and dilation d,
// the dx pixels phase + s j take dy[j + (phase + p - r d) / s] w[r] over
// the taps r with phase + p - r d a multiple of s.  The host needs, per
// axis, where one im2col map over dy starts for every phase and how far
// its taps reach from there.
#pragma once

#include <array>
#include <cstdint>

#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit {

struct PhaseAxis {
  std::int64_t origin = 0;  // the least dy offset of any phase's first tap
  std::int64_t extent = 1;  // the widest phase's pixels: ceil(dx size / s)
  std::int64_t reach = 0;   // the largest offset of any tap from the origin
  std::int64_t with_taps = 1;  // the phases in [0, s) that some tap lands on
};

// D, H, W (the canonical window's order); 1D and 2D convs' missing axes
// have one phase of one tap.
struct StridePhases {
  std::array<PhaseAxis, 3> axis;
  std::int64_t count = 1;      // the product of the strides
  std::int64_t with_taps = 1;  // the phases some tap lands on along every axis
};

// For a conv bwddata.
[[nodiscard]] StridePhases stride_phases(const OpDescriptor& desc);

}  // namespace convjit
