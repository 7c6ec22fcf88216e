#include "dispatcher/backends/cudnn/cudnn_descriptors.hpp"

namespace convjit {

namespace {

// A new descriptor object owned by its RAII wrapper.
template <class Handle>
Result<CudnnDescriptor<Handle>> create(const CudnnLibrary& cudnn,
                                       cudnnStatus_t (*create_fn)(Handle*),
                                       cudnnStatus_t (*destroy_fn)(Handle), const char* call) {
  Handle handle = nullptr;
  if (Status s = cudnn.check(create_fn(&handle), call); !s.is_ok()) return s;
  return CudnnDescriptor<Handle>(handle, destroy_fn);
}

}  // namespace

cudnnDataType_t cudnn_data_type(DataType dtype) {
  switch (dtype) {
    case DataType::f16:
      return CUDNN_DATA_HALF;
    case DataType::bf16:
      return CUDNN_DATA_BFLOAT16;
    case DataType::f64:
      return CUDNN_DATA_DOUBLE;
    case DataType::f32:
      break;
  }
  return CUDNN_DATA_FLOAT;
}

Result<CudnnTensor> make_cudnn_tensor(const CudnnLibrary& cudnn, DataType dtype,
                                      const CudnnTensorShape& shape) {
  const CudnnApi& api = cudnn.api();
  auto created = create(cudnn, api.create_tensor, api.destroy_tensor, "cudnnCreateTensorDescriptor");
  if (!created.is_ok()) return created.status();
  CudnnTensor tensor = std::move(created).value();
  const cudnnTensorDescriptor_t handle = tensor.get();
  if (Status s = cudnn.check(api.set_tensor(handle, cudnn_data_type(dtype), shape.rank,
                                            shape.dims.data(), shape.strides.data()),
                             "cudnnSetTensorNdDescriptor");
      !s.is_ok())
    return s;
  return tensor;
}

Result<CudnnFilter> make_cudnn_filter(const CudnnLibrary& cudnn, DataType dtype,
                                      const CudnnProblem& problem) {
  const CudnnApi& api = cudnn.api();
  auto created = create(cudnn, api.create_filter, api.destroy_filter, "cudnnCreateFilterDescriptor");
  if (!created.is_ok()) return created.status();
  CudnnFilter filter = std::move(created).value();
  const cudnnFilterDescriptor_t handle = filter.get();
  const cudnnTensorFormat_t format =
      problem.filter_channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  // Filter dims are always listed K, C/G, spatial...; the format says how
  // they are laid out.
  if (Status s = cudnn.check(api.set_filter(handle, cudnn_data_type(dtype), format,
                                            problem.w.rank, problem.w.dims.data()),
                             "cudnnSetFilterNdDescriptor");
      !s.is_ok())
    return s;
  return filter;
}

Result<CudnnConvolution> make_cudnn_convolution(const CudnnLibrary& cudnn,
                                                const CudnnProblem& problem,
                                                cudnnMathType_t math) {
  const CudnnApi& api = cudnn.api();
  auto created = create(cudnn, api.create_convolution, api.destroy_convolution, "cudnnCreateConvolutionDescriptor");
  if (!created.is_ok()) return created.status();
  CudnnConvolution convolution = std::move(created).value();
  const cudnnConvolutionDescriptor_t handle = convolution.get();
  if (Status s = cudnn.check(
          api.set_convolution(handle, problem.spatial_dims, problem.pad.data(),
                              problem.stride.data(), problem.dilation.data(),
                              CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
          "cudnnSetConvolutionNdDescriptor");
      !s.is_ok())
    return s;
  if (Status s = cudnn.check(api.set_group_count(handle, problem.groups),
                             "cudnnSetConvolutionGroupCount");
      !s.is_ok())
    return s;
  if (Status s = cudnn.check(api.set_math_type(handle, math), "cudnnSetConvolutionMathType");
      !s.is_ok())
    return s;
  return convolution;
}

Result<CudnnPooling> make_cudnn_pooling(const CudnnLibrary& cudnn, const CudnnProblem& problem,
                                        PoolingMode mode) {
  const CudnnApi& api = cudnn.api();
  auto created = create(cudnn, api.create_pooling, api.destroy_pooling, "cudnnCreatePoolingDescriptor");
  if (!created.is_ok()) return created.status();
  CudnnPooling pooling = std::move(created).value();
  const cudnnPoolingDescriptor_t handle = pooling.get();
  // Deterministic max, and NaN propagates like the reference's.
  const cudnnPoolingMode_t cudnn_mode = mode == PoolingMode::max ? CUDNN_POOLING_MAX_DETERMINISTIC
                                        : mode == PoolingMode::avg_include_pad
                                            ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                            : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  if (Status s = cudnn.check(
          api.set_pooling(handle, cudnn_mode, CUDNN_PROPAGATE_NAN, problem.spatial_dims,
                          problem.window.data(), problem.pad.data(), problem.stride.data()),
          "cudnnSetPoolingNdDescriptor");
      !s.is_ok())
    return s;
  return pooling;
}

}  // namespace convjit
