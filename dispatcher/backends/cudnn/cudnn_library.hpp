// cuDNN 9, loaded at run time with dlopen (found as cuda/library_search.hpp
// says) so the library and CLI start where cuDNN is missing; there,
// available() says why and the cuDNN backend declines.
//
// convjit calls cuDNN's descriptor-based ("legacy") API: it covers every op
// convjit has (convolution in three directions, pooling, the bias
// gradient), and cuDNN 9 still ships and supports it.  The graph API would
// add fusion, which convjit's single-op calls do not need.
#pragma once

#include <cudnn.h>

#include <string>

#include "convjit/status.hpp"
#include "dispatcher/libraries/library_search.hpp"

namespace convjit {

struct CudnnApi {
  decltype(&::cudnnGetVersion) get_version = nullptr;
  decltype(&::cudnnGetErrorString) get_error_string = nullptr;
  decltype(&::cudnnCreate) create = nullptr;
  decltype(&::cudnnDestroy) destroy = nullptr;
  decltype(&::cudnnSetStream) set_stream = nullptr;
  decltype(&::cudnnCreateTensorDescriptor) create_tensor = nullptr;
  decltype(&::cudnnSetTensorNdDescriptor) set_tensor = nullptr;
  decltype(&::cudnnDestroyTensorDescriptor) destroy_tensor = nullptr;
  decltype(&::cudnnCreateFilterDescriptor) create_filter = nullptr;
  decltype(&::cudnnSetFilterNdDescriptor) set_filter = nullptr;
  decltype(&::cudnnDestroyFilterDescriptor) destroy_filter = nullptr;
  decltype(&::cudnnCreateConvolutionDescriptor) create_convolution = nullptr;
  decltype(&::cudnnSetConvolutionNdDescriptor) set_convolution = nullptr;
  decltype(&::cudnnSetConvolutionGroupCount) set_group_count = nullptr;
  decltype(&::cudnnSetConvolutionMathType) set_math_type = nullptr;
  decltype(&::cudnnDestroyConvolutionDescriptor) destroy_convolution = nullptr;
  decltype(&::cudnnCreatePoolingDescriptor) create_pooling = nullptr;
  decltype(&::cudnnSetPoolingNdDescriptor) set_pooling = nullptr;
  decltype(&::cudnnDestroyPoolingDescriptor) destroy_pooling = nullptr;
  decltype(&::cudnnGetConvolutionForwardAlgorithm_v7) forward_algorithms = nullptr;
  decltype(&::cudnnGetConvolutionBackwardDataAlgorithm_v7) backward_data_algorithms = nullptr;
  decltype(&::cudnnGetConvolutionBackwardFilterAlgorithm_v7) backward_filter_algorithms = nullptr;
  decltype(&::cudnnGetConvolutionForwardWorkspaceSize) forward_workspace_size = nullptr;
  decltype(&::cudnnGetConvolutionBackwardDataWorkspaceSize) backward_data_workspace_size = nullptr;
  decltype(&::cudnnGetConvolutionBackwardFilterWorkspaceSize) backward_filter_workspace_size =
      nullptr;
  decltype(&::cudnnConvolutionForward) convolution_forward = nullptr;
  decltype(&::cudnnConvolutionBackwardData) convolution_backward_data = nullptr;
  decltype(&::cudnnConvolutionBackwardFilter) convolution_backward_filter = nullptr;
  decltype(&::cudnnConvolutionBackwardBias) convolution_backward_bias = nullptr;
  decltype(&::cudnnPoolingForward) pooling_forward = nullptr;
  decltype(&::cudnnPoolingBackward) pooling_backward = nullptr;
};

class CudnnLibrary : public SearchedLibrary {
 public:
  // Found and loaded once per process, under the process's environment, and
  // kept until exit.
  static const CudnnLibrary& instance();

  // Searches `places` (tests pass their own).
  explicit CudnnLibrary(const std::vector<SearchPlace>& places);

  // What is searched for: libcudnn.so.9.
  [[nodiscard]] static const LibrarySpec& spec();

  [[nodiscard]] const CudnnApi& api() const { return api_; }

  // A cuDNN call's result as a Status naming the call.
  [[nodiscard]] Status check(cudnnStatus_t result, const char* call) const;

 private:
  Status accept(void* handle);

  CudnnApi api_;
};

}  // namespace convjit
