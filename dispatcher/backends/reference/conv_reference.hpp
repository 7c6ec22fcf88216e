// Host reference convolution: forward, backward data, backward filter and
// the bias gradient, for every dtype, dim count, stride layout and group
// count.  Written for clarity first; parallel over independent outputs.
#pragma once

#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/exec_args.hpp"

namespace convjit::reference {

// desc must be validated, concrete (no symbolic batch) and of kind conv.
void conv_reference(const OpDescriptor& desc, const ExecArgs& args);

// desc must be validated, concrete and of kind bias_grad.
void bias_grad_reference(const OpDescriptor& desc, const ExecArgs& args);

}  // namespace convjit::reference
