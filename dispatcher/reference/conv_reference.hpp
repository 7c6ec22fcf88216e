// Host reference convolution: forward, backward data, backward filter and
// the bias gradient, for every dtype, dim count, stride layout and group
// count.  Written for clarity first; parallel over independent outputs.
#pragma once

#include "../exec_args.hpp"
#include "../op_descriptor.hpp"

namespace convjit::reference {

// desc must be validated, concrete (no symbolic batch) and of kind conv.
void conv_reference(const OpDescriptor& desc, const ExecArgs& args);

// desc must be validated, concrete and of kind bias_grad.
void bias_grad_reference(const OpDescriptor& desc, const ExecArgs& args);

}  // namespace convjit::reference
