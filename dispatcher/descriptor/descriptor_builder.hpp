// Builds a validated OpDescriptor from the C API's tensor descriptors and
// parameters, reporting API-level mistakes (NULL, rank, dtype mismatch) in
// terms of the caller's arguments.
#pragma once

#include "convjit/convjit.h"
#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

// x/w/y are the tensors in the descriptor's slots (see op_descriptor.hpp).
// With y == nullptr the y slot is derived: implied dims, contiguous NCHW.
[[nodiscard]] Result<OpDescriptor> make_conv_descriptor(const convjit_conv_params_t* params,
                                                        Direction direction,
                                                        const convjit_tensor_desc_t* x,
                                                        const convjit_tensor_desc_t* w,
                                                        const convjit_tensor_desc_t* y);

// A conv fwd with `epilogue` fused (null: the plain fwd); only whether its
// bias and residual pointers are null enters the descriptor.
[[nodiscard]] Result<OpDescriptor> make_fused_conv_descriptor(const convjit_conv_params_t* params,
                                                              const convjit_tensor_desc_t* x,
                                                              const convjit_tensor_desc_t* w,
                                                              const convjit_epilogue_t* epilogue,
                                                              const convjit_tensor_desc_t* y);

// With y == nullptr the y slot is derived using floor or ceil rounding.
[[nodiscard]] Result<OpDescriptor> make_pool_descriptor(const convjit_pool_params_t* params,
                                                        Direction direction,
                                                        const convjit_tensor_desc_t* x,
                                                        const convjit_tensor_desc_t* y,
                                                        bool ceil_mode = false);

[[nodiscard]] Result<OpDescriptor> make_bias_grad_descriptor(const convjit_tensor_desc_t* dy);

// A batchnorm whose NormFlag bits (scale, shift, inference, gradients) are
// `norm_flags`; the params give the activation and the running update.
// y is y (fwd) or dy (bwd).
[[nodiscard]] Result<OpDescriptor> make_batchnorm_descriptor(
    const convjit_batchnorm_params_t* params, Direction direction, std::int32_t norm_flags,
    const convjit_tensor_desc_t* x, const convjit_tensor_desc_t* y);

// The run-time value of a batchnorm's params, which is no part of its
// descriptor and so is checked on every call: momentum in [0, 1].
[[nodiscard]] Status check_batchnorm_values(const convjit_batchnorm_params_t& params);

// x/y are (x, y) fwd and (dx, dy) bwd.  With y == nullptr y's dims come
// from the scales, all of which must be given; its strides are NCHW.
[[nodiscard]] Result<OpDescriptor> make_resize_descriptor(const convjit_resize_params_t* params,
                                                          Direction direction,
                                                          const convjit_tensor_desc_t* x,
                                                          const convjit_tensor_desc_t* y);

}  // namespace convjit
