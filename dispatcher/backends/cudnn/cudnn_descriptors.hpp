// RAII owners of cuDNN's descriptor objects, built from a CudnnProblem.
// A kernel makes them once per OpDescriptor; calls only read them.
#pragma once

#include <utility>

#include "dispatcher/backends/cudnn/cudnn_library.hpp"
#include "dispatcher/backends/cudnn/cudnn_problem.hpp"
#include "dispatcher/descriptor/dtype.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

template <class Handle>
class CudnnDescriptor {
 public:
  using Destroy = cudnnStatus_t (*)(Handle);
  CudnnDescriptor() = default;
  CudnnDescriptor(Handle handle, Destroy destroy) : handle_(handle), destroy_(destroy) {}
  ~CudnnDescriptor() {
    if (handle_ != nullptr) (void)destroy_(handle_);
  }
  CudnnDescriptor(CudnnDescriptor&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)), destroy_(other.destroy_) {}
  CudnnDescriptor& operator=(CudnnDescriptor&& other) noexcept {
    std::swap(handle_, other.handle_);
    std::swap(destroy_, other.destroy_);
    return *this;
  }
  CudnnDescriptor(const CudnnDescriptor&) = delete;
  CudnnDescriptor& operator=(const CudnnDescriptor&) = delete;

  [[nodiscard]] Handle get() const { return handle_; }

 private:
  Handle handle_ = nullptr;
  Destroy destroy_ = nullptr;
};

using CudnnTensor = CudnnDescriptor<cudnnTensorDescriptor_t>;
using CudnnFilter = CudnnDescriptor<cudnnFilterDescriptor_t>;
using CudnnConvolution = CudnnDescriptor<cudnnConvolutionDescriptor_t>;
using CudnnPooling = CudnnDescriptor<cudnnPoolingDescriptor_t>;

[[nodiscard]] cudnnDataType_t cudnn_data_type(DataType dtype);

[[nodiscard]] Result<CudnnTensor> make_cudnn_tensor(const CudnnLibrary& cudnn, DataType dtype,
                                                    const CudnnTensorShape& shape);
[[nodiscard]] Result<CudnnFilter> make_cudnn_filter(const CudnnLibrary& cudnn, DataType dtype,
                                                    const CudnnProblem& problem);
// Cross-correlation (what deep learning calls convolution) with f32
// accumulation for every dtype, and `math` (FMA or tensor cores).
[[nodiscard]] Result<CudnnConvolution> make_cudnn_convolution(const CudnnLibrary& cudnn,
                                                              const CudnnProblem& problem,
                                                              cudnnMathType_t math);
[[nodiscard]] Result<CudnnPooling> make_cudnn_pooling(const CudnnLibrary& cudnn,
                                                      const CudnnProblem& problem,
                                                      PoolingMode mode);

}  // namespace convjit
