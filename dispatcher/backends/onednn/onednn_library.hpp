// oneDNN 2.x, loaded at run time with dlopen (found as cuda/library_search.hpp
// says: CONVJIT_ONEDNN_LIBRARY, else the loader's default search) so that
// libconvjit.so loads where oneDNN is missing; there, available() says why
// and the onednn backend declines.
//
// convjit calls oneDNN's C API: its ABI is the stable one, and the C++ API
// is a header-only layer over it that would bind the symbols at link time.
#pragma once

#include <dnnl.h>

#include <string>

#include "convjit/status.hpp"
#include "dispatcher/libraries/library_search.hpp"

namespace convjit {

struct OnednnApi {
  decltype(&::dnnl_version) version = nullptr;
  decltype(&::dnnl_get_effective_cpu_isa) effective_cpu_isa = nullptr;
  decltype(&::dnnl_engine_create) engine_create = nullptr;
  decltype(&::dnnl_engine_destroy) engine_destroy = nullptr;
  decltype(&::dnnl_stream_create) stream_create = nullptr;
  decltype(&::dnnl_stream_destroy) stream_destroy = nullptr;
  decltype(&::dnnl_stream_wait) stream_wait = nullptr;
  decltype(&::dnnl_memory_desc_init_by_strides) memory_desc_init_by_strides = nullptr;
  decltype(&::dnnl_memory_desc_init_by_tag) memory_desc_init_by_tag = nullptr;
  decltype(&::dnnl_memory_desc_get_size) memory_desc_get_size = nullptr;
  decltype(&::dnnl_memory_desc_equal) memory_desc_equal = nullptr;
  decltype(&::dnnl_memory_create) memory_create = nullptr;
  decltype(&::dnnl_memory_set_data_handle) memory_set_data_handle = nullptr;
  decltype(&::dnnl_memory_destroy) memory_destroy = nullptr;
  decltype(&::dnnl_primitive_attr_create) attr_create = nullptr;
  decltype(&::dnnl_primitive_attr_destroy) attr_destroy = nullptr;
  decltype(&::dnnl_primitive_attr_set_scratchpad_mode) attr_set_scratchpad_mode = nullptr;
  decltype(&::dnnl_dilated_convolution_forward_desc_init) conv_forward_desc = nullptr;
  decltype(&::dnnl_dilated_convolution_backward_data_desc_init) conv_backward_data_desc = nullptr;
  decltype(&::dnnl_dilated_convolution_backward_weights_desc_init) conv_backward_weights_desc =
      nullptr;
  decltype(&::dnnl_pooling_v2_forward_desc_init) pooling_forward_desc = nullptr;
  decltype(&::dnnl_pooling_v2_backward_desc_init) pooling_backward_desc = nullptr;
  decltype(&::dnnl_reduction_desc_init) reduction_desc = nullptr;
  decltype(&::dnnl_resampling_forward_desc_init) resampling_forward_desc = nullptr;
  decltype(&::dnnl_resampling_backward_desc_init) resampling_backward_desc = nullptr;
  decltype(&::dnnl_batch_normalization_forward_desc_init) batch_normalization_forward_desc =
      nullptr;
  decltype(&::dnnl_batch_normalization_backward_desc_init) batch_normalization_backward_desc =
      nullptr;
  decltype(&::dnnl_eltwise_forward_desc_init) eltwise_forward_desc = nullptr;
  decltype(&::dnnl_eltwise_backward_desc_init) eltwise_backward_desc = nullptr;
  decltype(&::dnnl_reorder_primitive_desc_create) reorder_primitive_desc_create = nullptr;
  decltype(&::dnnl_primitive_desc_create) primitive_desc_create = nullptr;
  decltype(&::dnnl_primitive_desc_query) primitive_desc_query = nullptr;
  decltype(&::dnnl_primitive_desc_query_md) primitive_desc_query_md = nullptr;
  decltype(&::dnnl_primitive_desc_destroy) primitive_desc_destroy = nullptr;
  decltype(&::dnnl_primitive_create) primitive_create = nullptr;
  decltype(&::dnnl_primitive_execute) primitive_execute = nullptr;
  decltype(&::dnnl_primitive_destroy) primitive_destroy = nullptr;
};

class OnednnLibrary : public SearchedLibrary {
 public:
  // Found and loaded once per process, under the process's environment, and
  // kept until exit.
  static const OnednnLibrary& instance();

  // Searches `places` (tests pass their own).
  explicit OnednnLibrary(const std::vector<SearchPlace>& places);

  // What is searched for: libdnnl.so.2.
  [[nodiscard]] static const LibrarySpec& spec();

  [[nodiscard]] const OnednnApi& api() const { return api_; }

  // The instruction set oneDNN's kernels use on this CPU ("avx512_core_bf16"),
  // after ONEDNN_MAX_CPU_ISA; empty when the library is not available.
  [[nodiscard]] const std::string& cpu_isa() const { return cpu_isa_; }

  // A oneDNN call's result as a Status naming the call.
  [[nodiscard]] Status check(dnnl_status_t result, const char* call) const;

 private:
  Status accept(void* handle);

  OnednnApi api_;
  std::string cpu_isa_;
};

// The process's oneDNN, as the backend's files call it.
inline const OnednnLibrary& onednn() { return OnednnLibrary::instance(); }

// oneDNN's name for an instruction set ("avx2", "avx512_core_bf16").
[[nodiscard]] std::string_view cpu_isa_name(dnnl_cpu_isa_t isa);

// oneDNN's name for a status ("unimplemented").
[[nodiscard]] std::string_view onednn_status_name(dnnl_status_t status);

}  // namespace convjit
