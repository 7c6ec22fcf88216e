#include "dispatcher/backends/onednn/onednn_library.hpp"

#include <fmt/format.h>

#include "dispatcher/libraries/dynamic_symbol.hpp"
#include "dispatcher/libraries/library_call_status.hpp"

namespace convjit {

namespace {

// The first symbol the library lacks, or nullptr.
const char* resolve_all(void* library, OnednnApi& api) {
  const SymbolLookup symbols[] = {
      CONVJIT_LOAD_SYMBOL(library, api, effective_cpu_isa, dnnl_get_effective_cpu_isa),
      CONVJIT_LOAD_SYMBOL(library, api, engine_create, dnnl_engine_create),
      CONVJIT_LOAD_SYMBOL(library, api, engine_destroy, dnnl_engine_destroy),
      CONVJIT_LOAD_SYMBOL(library, api, stream_create, dnnl_stream_create),
      CONVJIT_LOAD_SYMBOL(library, api, stream_destroy, dnnl_stream_destroy),
      CONVJIT_LOAD_SYMBOL(library, api, stream_wait, dnnl_stream_wait),
      CONVJIT_LOAD_SYMBOL(library, api, memory_desc_init_by_strides,
                          dnnl_memory_desc_init_by_strides),
      CONVJIT_LOAD_SYMBOL(library, api, memory_desc_init_by_tag, dnnl_memory_desc_init_by_tag),
      CONVJIT_LOAD_SYMBOL(library, api, memory_desc_get_size, dnnl_memory_desc_get_size),
      CONVJIT_LOAD_SYMBOL(library, api, memory_desc_equal, dnnl_memory_desc_equal),
      CONVJIT_LOAD_SYMBOL(library, api, memory_create, dnnl_memory_create),
      CONVJIT_LOAD_SYMBOL(library, api, memory_set_data_handle, dnnl_memory_set_data_handle),
      CONVJIT_LOAD_SYMBOL(library, api, memory_destroy, dnnl_memory_destroy),
      CONVJIT_LOAD_SYMBOL(library, api, attr_create, dnnl_primitive_attr_create),
      CONVJIT_LOAD_SYMBOL(library, api, attr_destroy, dnnl_primitive_attr_destroy),
      CONVJIT_LOAD_SYMBOL(library, api, attr_set_scratchpad_mode,
                          dnnl_primitive_attr_set_scratchpad_mode),
      CONVJIT_LOAD_SYMBOL(library, api, conv_forward_desc,
                          dnnl_dilated_convolution_forward_desc_init),
      CONVJIT_LOAD_SYMBOL(library, api, conv_backward_data_desc,
                          dnnl_dilated_convolution_backward_data_desc_init),
      CONVJIT_LOAD_SYMBOL(library, api, conv_backward_weights_desc,
                          dnnl_dilated_convolution_backward_weights_desc_init),
      CONVJIT_LOAD_SYMBOL(library, api, pooling_forward_desc, dnnl_pooling_v2_forward_desc_init),
      CONVJIT_LOAD_SYMBOL(library, api, pooling_backward_desc, dnnl_pooling_v2_backward_desc_init),
      CONVJIT_LOAD_SYMBOL(library, api, reduction_desc, dnnl_reduction_desc_init),
      CONVJIT_LOAD_SYMBOL(library, api, resampling_forward_desc, dnnl_resampling_forward_desc_init),
      CONVJIT_LOAD_SYMBOL(library, api, resampling_backward_desc,
                          dnnl_resampling_backward_desc_init),
      CONVJIT_LOAD_SYMBOL(library, api, batch_normalization_forward_desc,
                          dnnl_batch_normalization_forward_desc_init),
      CONVJIT_LOAD_SYMBOL(library, api, batch_normalization_backward_desc,
                          dnnl_batch_normalization_backward_desc_init),
      CONVJIT_LOAD_SYMBOL(library, api, eltwise_forward_desc, dnnl_eltwise_forward_desc_init),
      CONVJIT_LOAD_SYMBOL(library, api, eltwise_backward_desc, dnnl_eltwise_backward_desc_init),
      CONVJIT_LOAD_SYMBOL(library, api, reorder_primitive_desc_create,
                          dnnl_reorder_primitive_desc_create),
      CONVJIT_LOAD_SYMBOL(library, api, primitive_desc_create, dnnl_primitive_desc_create),
      CONVJIT_LOAD_SYMBOL(library, api, primitive_desc_query, dnnl_primitive_desc_query),
      CONVJIT_LOAD_SYMBOL(library, api, primitive_desc_query_md, dnnl_primitive_desc_query_md),
      CONVJIT_LOAD_SYMBOL(library, api, primitive_desc_destroy, dnnl_primitive_desc_destroy),
      CONVJIT_LOAD_SYMBOL(library, api, primitive_create, dnnl_primitive_create),
      CONVJIT_LOAD_SYMBOL(library, api, primitive_execute, dnnl_primitive_execute),
      CONVJIT_LOAD_SYMBOL(library, api, primitive_destroy, dnnl_primitive_destroy),
  };
  return first_missing(symbols);
}

}  // namespace

std::string_view cpu_isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41:
      return "sse41";
    case dnnl_cpu_isa_avx:
      return "avx";
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx2_vnni:
      return "avx2_vnni";
    case dnnl_cpu_isa_avx512_mic:
      return "avx512_mic";
    case dnnl_cpu_isa_avx512_mic_4ops:
      return "avx512_mic_4ops";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    case dnnl_cpu_isa_all:
      break;
  }
  return "unknown";
}

std::string_view onednn_status_name(dnnl_status_t status) {
  switch (status) {
    case dnnl_success:
      return "success";
    case dnnl_out_of_memory:
      return "out_of_memory";
    case dnnl_invalid_arguments:
      return "invalid_arguments";
    case dnnl_unimplemented:
      return "unimplemented";
    case dnnl_iterator_ends:
      return "iterator_ends";
    case dnnl_runtime_error:
      return "runtime_error";
    case dnnl_not_required:
      return "not_required";
  }
  return "unknown status";
}

const LibrarySpec& OnednnLibrary::spec() {
  static const LibrarySpec spec{"oneDNN",
                                "CONVJIT_ONEDNN_LIBRARY",
                                {"libdnnl.so.2"},
                                "oneDNN 2.x (Debian's libdnnl2)",
                                /*nvidia_places=*/false};
  return spec;
}

const OnednnLibrary& OnednnLibrary::instance() {
  static const OnednnLibrary* library =
      new OnednnLibrary(library_search_places(spec(), process_environment));  // kept until exit
  return *library;
}

OnednnLibrary::OnednnLibrary(const std::vector<SearchPlace>& places) {
  search(spec(), places, [this](void* handle) { return accept(handle); });
  if (!available().is_ok()) api_ = {}, cpu_isa_.clear();
}

// The version first, so a oneDNN 3 (whose C API replaced the op
// descriptors) is named as such rather than by a symbol it lacks.
Status OnednnLibrary::accept(void* handle) {
  api_ = {};
  if (!load_symbol(handle, "dnnl_version", api_.version))
    return Status::not_available("not oneDNN: it lacks dnnl_version");
  const dnnl_version_t* v = api_.version();
  if (v->major != 2 || v->minor < 3)
    return Status::not_available(fmt::format(
        "it is oneDNN {}.{}; convjit needs oneDNN 2.3 or a later 2.x", v->major, v->minor));
  if (const char* missing = resolve_all(handle, api_))
    return Status::not_available(fmt::format("it lacks {}", missing));
  version_ = fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
  cpu_isa_ = std::string(cpu_isa_name(api_.effective_cpu_isa()));
  return Status::ok();
}

Status OnednnLibrary::check(dnnl_status_t result, const char* call) const {
  if (result == dnnl_success) return Status::ok();
  const convjit_status_t code =
      result == dnnl_unimplemented ? CONVJIT_STATUS_UNSUPPORTED : CONVJIT_STATUS_EXECUTION_FAILED;
  return failed_library_call(code, call, onednn_status_name(result).data(),
                             static_cast<int>(result));
}

}  // namespace convjit
