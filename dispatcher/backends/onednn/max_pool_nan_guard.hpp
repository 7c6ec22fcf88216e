// NaN in a max-pooling window wins in convjit's reference, as in PyTorch;
// oneDNN's max-pooling kernels compare with ordered comparisons, so a NaN
// loses there, and its backward sends the gradient elsewhere.  A max-pool
// kernel therefore looks for NaN in x first (one read of x, cheap beside
// the pooling's own) and hands a call whose x holds one to the reference.
#pragma once

#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/exec_args.hpp"

namespace convjit {

// Whether calls of `desc` need the guard: max pooling, either direction.
[[nodiscard]] bool needs_max_pool_nan_guard(const OpDescriptor& desc);

// Whether x (laid out as desc's x slot) holds a NaN.
[[nodiscard]] bool input_has_nan(const OpDescriptor& desc, const void* x);

}  // namespace convjit
