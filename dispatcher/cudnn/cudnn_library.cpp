#include "cudnn/cudnn_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <utility>

namespace convjit {

namespace {

template <class Fn>
bool resolve(void* library, const char* name, Fn& target) {
  target = reinterpret_cast<Fn>(::dlsym(library, name));
  return target != nullptr;
}

// The first symbol the library lacks, or nullptr.
const char* resolve_all(void* library, CudnnApi& api) {
  const std::pair<const char*, bool> symbols[] = {
      {"cudnnGetVersion", resolve(library, "cudnnGetVersion", api.get_version)},
      {"cudnnGetErrorString", resolve(library, "cudnnGetErrorString", api.get_error_string)},
      {"cudnnCreate", resolve(library, "cudnnCreate", api.create)},
      {"cudnnDestroy", resolve(library, "cudnnDestroy", api.destroy)},
      {"cudnnSetStream", resolve(library, "cudnnSetStream", api.set_stream)},
      {"cudnnCreateTensorDescriptor",
       resolve(library, "cudnnCreateTensorDescriptor", api.create_tensor)},
      {"cudnnSetTensorNdDescriptor", resolve(library, "cudnnSetTensorNdDescriptor", api.set_tensor)},
      {"cudnnDestroyTensorDescriptor",
       resolve(library, "cudnnDestroyTensorDescriptor", api.destroy_tensor)},
      {"cudnnCreateFilterDescriptor",
       resolve(library, "cudnnCreateFilterDescriptor", api.create_filter)},
      {"cudnnSetFilterNdDescriptor", resolve(library, "cudnnSetFilterNdDescriptor", api.set_filter)},
      {"cudnnDestroyFilterDescriptor",
       resolve(library, "cudnnDestroyFilterDescriptor", api.destroy_filter)},
      {"cudnnCreateConvolutionDescriptor",
       resolve(library, "cudnnCreateConvolutionDescriptor", api.create_convolution)},
      {"cudnnSetConvolutionNdDescriptor",
       resolve(library, "cudnnSetConvolutionNdDescriptor", api.set_convolution)},
      {"cudnnSetConvolutionGroupCount",
       resolve(library, "cudnnSetConvolutionGroupCount", api.set_group_count)},
      {"cudnnSetConvolutionMathType",
       resolve(library, "cudnnSetConvolutionMathType", api.set_math_type)},
      {"cudnnDestroyConvolutionDescriptor",
       resolve(library, "cudnnDestroyConvolutionDescriptor", api.destroy_convolution)},
      {"cudnnCreatePoolingDescriptor",
       resolve(library, "cudnnCreatePoolingDescriptor", api.create_pooling)},
      {"cudnnSetPoolingNdDescriptor",
       resolve(library, "cudnnSetPoolingNdDescriptor", api.set_pooling)},
      {"cudnnDestroyPoolingDescriptor",
       resolve(library, "cudnnDestroyPoolingDescriptor", api.destroy_pooling)},
      {"cudnnGetConvolutionForwardAlgorithm_v7",
       resolve(library, "cudnnGetConvolutionForwardAlgorithm_v7", api.forward_algorithms)},
      {"cudnnGetConvolutionBackwardDataAlgorithm_v7",
       resolve(library, "cudnnGetConvolutionBackwardDataAlgorithm_v7",
               api.backward_data_algorithms)},
      {"cudnnGetConvolutionBackwardFilterAlgorithm_v7",
       resolve(library, "cudnnGetConvolutionBackwardFilterAlgorithm_v7",
               api.backward_filter_algorithms)},
      {"cudnnConvolutionForward", resolve(library, "cudnnConvolutionForward", api.convolution_forward)},
      {"cudnnConvolutionBackwardData",
       resolve(library, "cudnnConvolutionBackwardData", api.convolution_backward_data)},
      {"cudnnConvolutionBackwardFilter",
       resolve(library, "cudnnConvolutionBackwardFilter", api.convolution_backward_filter)},
      {"cudnnConvolutionBackwardBias",
       resolve(library, "cudnnConvolutionBackwardBias", api.convolution_backward_bias)},
      {"cudnnPoolingForward", resolve(library, "cudnnPoolingForward", api.pooling_forward)},
      {"cudnnPoolingBackward", resolve(library, "cudnnPoolingBackward", api.pooling_backward)},
  };
  for (const auto& [name, found] : symbols)
    if (!found) return name;
  return nullptr;
}

}  // namespace

const CudnnLibrary& CudnnLibrary::instance() {
  static const CudnnLibrary* library = new CudnnLibrary("libcudnn.so.9");  // kept until exit
  return *library;
}

CudnnLibrary::CudnnLibrary(const char* soname) {
  void* library = ::dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = ::dlerror();
    status_ = Status::not_available(fmt::format(
        "cuDNN not found: {}; install cuDNN 9 or add its directory to LD_LIBRARY_PATH",
        error ? error : soname));
    return;
  }
  if (const char* missing = resolve_all(library, api_)) {
    status_ = Status::not_available(
        fmt::format("{} lacks {}; convjit needs cuDNN 9", soname, missing));
    ::dlclose(library);
    api_ = {};
    return;
  }
  const std::size_t v = api_.get_version();
  if (v / 10000 != 9) {
    status_ = Status::not_available(fmt::format("{} is cuDNN {}, not 9", soname, v / 10000));
    return;
  }
  version_ = fmt::format("{}.{}.{}", v / 10000, v / 100 % 100, v % 100);
}

Status CudnnLibrary::check(cudnnStatus_t result, const char* call) const {
  if (result == CUDNN_STATUS_SUCCESS) return Status::ok();
  const char* text = api_.get_error_string ? api_.get_error_string(result) : nullptr;
  // cuDNN 9 groups its codes by thousands: 3xxx are the "not supported" kinds.
  const convjit_status_t code = static_cast<int>(result) / 1000 == 3
                                    ? CONVJIT_STATUS_UNSUPPORTED
                                    : CONVJIT_STATUS_EXECUTION_FAILED;
  return Status(code, fmt::format("{} failed: {} ({})", call, text ? text : "unknown error",
                                  static_cast<int>(result)));
}

}  // namespace convjit
