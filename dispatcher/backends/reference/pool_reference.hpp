// Host reference pooling: max and average (padding counted or not), forward
// and backward, any dims, strides, asymmetric padding and ceil-mode shapes.
//
// Max pooling picks, per window, the first element in window scan order
// (D, then H, then W) that is NaN, else the first that attains the maximum;
// backward sends the gradient to exactly that element.  A window that covers
// no input element (only possible with dilation) yields -infinity and no
// gradient, as in PyTorch.
#pragma once

#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/exec_args.hpp"

namespace convjit::reference {

// desc must be validated, concrete and of kind pool.
void pool_reference(const OpDescriptor& desc, const ExecArgs& args);

}  // namespace convjit::reference
