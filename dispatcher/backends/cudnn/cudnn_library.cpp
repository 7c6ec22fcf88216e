#include "dispatcher/backends/cudnn/cudnn_library.hpp"

#include <fmt/format.h>

#include "dispatcher/libraries/dynamic_symbol.hpp"
#include "dispatcher/libraries/library_call_status.hpp"

namespace convjit {

namespace {

// The first symbol the library lacks, or nullptr.
const char* resolve_all(void* library, CudnnApi& api) {
  const SymbolLookup symbols[] = {
      CONVJIT_LOAD_SYMBOL(library, api, get_error_string, cudnnGetErrorString),
      CONVJIT_LOAD_SYMBOL(library, api, create, cudnnCreate),
      CONVJIT_LOAD_SYMBOL(library, api, destroy, cudnnDestroy),
      CONVJIT_LOAD_SYMBOL(library, api, set_stream, cudnnSetStream),
      CONVJIT_LOAD_SYMBOL(library, api, create_tensor, cudnnCreateTensorDescriptor),
      CONVJIT_LOAD_SYMBOL(library, api, set_tensor, cudnnSetTensorNdDescriptor),
      CONVJIT_LOAD_SYMBOL(library, api, destroy_tensor, cudnnDestroyTensorDescriptor),
      CONVJIT_LOAD_SYMBOL(library, api, create_filter, cudnnCreateFilterDescriptor),
      CONVJIT_LOAD_SYMBOL(library, api, set_filter, cudnnSetFilterNdDescriptor),
      CONVJIT_LOAD_SYMBOL(library, api, destroy_filter, cudnnDestroyFilterDescriptor),
      CONVJIT_LOAD_SYMBOL(library, api, create_convolution, cudnnCreateConvolutionDescriptor),
      CONVJIT_LOAD_SYMBOL(library, api, set_convolution, cudnnSetConvolutionNdDescriptor),
      CONVJIT_LOAD_SYMBOL(library, api, set_group_count, cudnnSetConvolutionGroupCount),
      CONVJIT_LOAD_SYMBOL(library, api, set_math_type, cudnnSetConvolutionMathType),
      CONVJIT_LOAD_SYMBOL(library, api, destroy_convolution, cudnnDestroyConvolutionDescriptor),
      CONVJIT_LOAD_SYMBOL(library, api, create_pooling, cudnnCreatePoolingDescriptor),
      CONVJIT_LOAD_SYMBOL(library, api, set_pooling, cudnnSetPoolingNdDescriptor),
      CONVJIT_LOAD_SYMBOL(library, api, destroy_pooling, cudnnDestroyPoolingDescriptor),
      CONVJIT_LOAD_SYMBOL(library, api, forward_algorithms, cudnnGetConvolutionForwardAlgorithm_v7),
      CONVJIT_LOAD_SYMBOL(library, api, backward_data_algorithms, cudnnGetConvolutionBackwardDataAlgorithm_v7),
      CONVJIT_LOAD_SYMBOL(library, api, backward_filter_algorithms, cudnnGetConvolutionBackwardFilterAlgorithm_v7),
      CONVJIT_LOAD_SYMBOL(library, api, forward_workspace_size, cudnnGetConvolutionForwardWorkspaceSize),
      CONVJIT_LOAD_SYMBOL(library, api, backward_data_workspace_size, cudnnGetConvolutionBackwardDataWorkspaceSize),
      CONVJIT_LOAD_SYMBOL(library, api, backward_filter_workspace_size, cudnnGetConvolutionBackwardFilterWorkspaceSize),
      CONVJIT_LOAD_SYMBOL(library, api, convolution_forward, cudnnConvolutionForward),
      CONVJIT_LOAD_SYMBOL(library, api, convolution_backward_data, cudnnConvolutionBackwardData),
      CONVJIT_LOAD_SYMBOL(library, api, convolution_backward_filter, cudnnConvolutionBackwardFilter),
      CONVJIT_LOAD_SYMBOL(library, api, convolution_backward_bias, cudnnConvolutionBackwardBias),
      CONVJIT_LOAD_SYMBOL(library, api, pooling_forward, cudnnPoolingForward),
      CONVJIT_LOAD_SYMBOL(library, api, pooling_backward, cudnnPoolingBackward),
  };
  return first_missing(symbols);
}

}  // namespace

const LibrarySpec& CudnnLibrary::spec() {
  static const LibrarySpec spec{
      "cuDNN", "CONVJIT_CUDNN_LIBRARY", {"libcudnn.so.9"}, "cuDNN 9"};
  return spec;
}

const CudnnLibrary& CudnnLibrary::instance() {
  static const CudnnLibrary* library =
      new CudnnLibrary(library_search_places(spec(), process_environment));  // kept until exit
  return *library;
}

CudnnLibrary::CudnnLibrary(const std::vector<SearchPlace>& places) {
  search(spec(), places, [this](void* handle) { return accept(handle); });
  if (!available().is_ok()) api_ = {};
}

// The version first, so a cuDNN of another major is named as such rather than
// by whichever symbol it happens to lack.
Status CudnnLibrary::accept(void* handle) {
  api_ = {};
  if (!load_symbol(handle, "cudnnGetVersion", api_.get_version))
    return Status::not_available("not cuDNN: it lacks cudnnGetVersion");
  const std::size_t v = api_.get_version();
  if (v / 10000 != 9) {
    // cuDNN 8 and earlier encode major * 1000 + minor * 100 + patch.
    const bool old_encoding = v < 10000;
    return Status::not_available(fmt::format(
        "it is cuDNN {}.{}; convjit needs cuDNN 9", old_encoding ? v / 1000 : v / 10000,
        old_encoding ? v / 100 % 10 : v / 100 % 100));
  }
  if (const char* missing = resolve_all(handle, api_))
    return Status::not_available(fmt::format("it lacks {}", missing));
  version_ = fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
  return Status::ok();
}

Status CudnnLibrary::check(cudnnStatus_t result, const char* call) const {
  if (result == CUDNN_STATUS_SUCCESS) return Status::ok();
  const char* text = api_.get_error_string ? api_.get_error_string(result) : nullptr;
  // cuDNN 9 groups its codes by thousands: 3xxx are the "not supported" kinds.
  const convjit_status_t code = static_cast<int>(result) / 1000 == 3
                                    ? CONVJIT_STATUS_UNSUPPORTED
                                    : CONVJIT_STATUS_EXECUTION_FAILED;
  return failed_library_call(code, call, text, static_cast<int>(result));
}

}  // namespace convjit
