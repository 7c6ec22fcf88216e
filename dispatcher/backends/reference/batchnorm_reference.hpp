// Host reference batch normalisation (convjit.h has the formulas): training
// and inference forward with PyTorch's or ONNX's running update, and the
// backward of either, with an optional fused ReLU or SiLU.  Statistics are
// accumulated in f64 whatever the dtype, the variance in a second pass over
// the mean, so this judges every other backend.
#pragma once

#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/exec_args.hpp"

namespace convjit::reference {

// desc must be validated, concrete and of kind batchnorm.
void batchnorm_reference(const OpDescriptor& desc, const ExecArgs& args);

}  // namespace convjit::reference
