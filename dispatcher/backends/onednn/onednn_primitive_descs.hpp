// oneDNN primitive descriptors for a convjit problem (onednn_problem.hpp):
// the op descriptors, their memory descriptors, and the attributes every
// convjit primitive shares (a scratchpad the kernel owns).
#pragma once

#include <string>

#include "dispatcher/backends/onednn/onednn_handles.hpp"
#include "dispatcher/backends/onednn/onednn_problem.hpp"

namespace convjit {

// Where a primitive's memory descriptors come from: the caller's strides,
// or oneDNN's choice (format "any", reordered to and from).
enum class OnednnLayout { strided, blocked };

[[nodiscard]] dnnl_data_type_t onednn_data_type(DataType type);

// `t` with its own strides.
[[nodiscard]] Result<dnnl_memory_desc_t> strided_md(const OnednnTensor& t, DataType type);

// A primitive made for the problem: its descriptor, and for a backward one
// the forward descriptor it was made from (max pooling runs that forward).
struct OnednnPrimitiveDescs {
  OnednnPrimitiveDesc pd;
  OnednnPrimitiveDesc forward;  // backward ops only
};

// The op's primitive, whose output has `result_type` and is laid out as the
// caller's output (strided) or as oneDNN chooses (blocked).  UNSUPPORTED
// when oneDNN has no implementation of it.
[[nodiscard]] Result<OnednnPrimitiveDescs> make_primitive_descs(const OpDescriptor& desc,
                                                                const OnednnProblem& problem,
                                                                OnednnLayout layout,
                                                                DataType result_type);

// Batch normalization on `data` (x, y, dx and dy alike: oneDNN 2 gives
// them one md) with oneDNN's `flags` (dnnl_use_scale, ...): the forward of
// `prop`, or the backward (dnnl_backward, with parameter gradients, where
// the flags use a scale or shift).
[[nodiscard]] Result<OnednnPrimitiveDesc> batchnorm_forward_pd(const dnnl_memory_desc_t& data,
                                                               float epsilon, dnnl_prop_kind_t prop,
                                                               unsigned flags);
[[nodiscard]] Result<OnednnPrimitiveDesc> batchnorm_backward_pd(const dnnl_memory_desc_t& data,
                                                                float epsilon, unsigned flags);

// An elementwise `algorithm` (with its `alpha`) on `data`: the forward
// (inference), or the backward of dst from src and diff_dst.
[[nodiscard]] Result<OnednnPrimitiveDesc> eltwise_forward_pd(const dnnl_memory_desc_t& data,
                                                             dnnl_alg_kind_t algorithm,
                                                             float alpha);
[[nodiscard]] Result<OnednnPrimitiveDesc> eltwise_backward_pd(const dnnl_memory_desc_t& data,
                                                              dnnl_alg_kind_t algorithm,
                                                              float alpha);

// A reorder from `from` to `to`, with a user scratchpad.
[[nodiscard]] Result<OnednnPrimitiveDesc> reorder_pd(const dnnl_memory_desc_t& from,
                                                     const dnnl_memory_desc_t& to);

// oneDNN's name for the implementation it chose ("jit:avx512_core").
[[nodiscard]] std::string implementation_name(const_dnnl_primitive_desc_t pd);

}  // namespace convjit
