// A conv bwddata of unit strides is the forward conv of dy with the
// filters transposed (K channels of C filters) and flipped in every tap
// axis, padded by each axis's reach (dilation x (taps - 1)) less its own
// padding, which writes dx.  The kernels that compute it so (the Hopper
// conv, the conv of few filters) take their constants from this
// descriptor and read w flipped themselves (Problem::FLIP).
#pragma once

#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit {

// Whether `d` is a conv bwddata of stride 1 on every axis.
[[nodiscard]] bool unit_stride_bwddata(const OpDescriptor& d);

// `d`'s filters as a bwddata's forward conv reads them: w's dims and
// strides 0 and 1 swapped, its K channels of C filters.
[[nodiscard]] OpDescriptor transposed_filters(const OpDescriptor& d);

// A bwddata's operands as a forward conv's: x and y swapped (dy in, dx
// out), the filters transposed; the window as it is, and the direction
// fwd.  What the window then means is the kernel's: the two below.
[[nodiscard]] OpDescriptor bwddata_operands_as_forward(const OpDescriptor& d);

// The forward conv `d` computes, for a `d` with unit_stride_bwddata: its
// operands as a forward conv's, the padding the reach's complement.  Its
// filters are read flipped.
[[nodiscard]] OpDescriptor bwddata_as_forward(const OpDescriptor& d);

}  // namespace convjit
