// Host reference resize: nearest (four roundings) and linear interpolation
// over 1 to 3 spatial dims, forward and backward.  Source coordinates are
// computed as PyTorch computes them (resize_taps.hpp); values accumulate in
// the reference's accumulation type.  The backward scatters each output's
// gradient into an f64 plane in output order, so it is deterministic.
#pragma once

#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/exec_args.hpp"

namespace convjit::reference {

// desc must be validated, concrete and of kind resize.
void resize_reference(const OpDescriptor& desc, const ExecArgs& args);

}  // namespace convjit::reference
