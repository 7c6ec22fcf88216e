#include "cudnn/cudnn_algorithm.hpp"

#include <fmt/format.h>

#include <array>
#include <vector>

namespace convjit {

namespace {

// More than any direction has algorithms in cuDNN 9.
constexpr int kMaxAlgorithms = 16;

std::string_view math_name(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_FMA_MATH:
      return "FMA";
    case CUDNN_TENSOR_OP_MATH:
      return "tensor-op";
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION:
      return "tensor-op with conversion";
    case CUDNN_DEFAULT_MATH:
      break;
  }
  return "default";
}

// The heuristics' ranked list for one direction.
template <class Perf, class Query>
Result<std::vector<Perf>> ranked(const CudnnLibrary& cudnn, Query query, const char* call) {
  std::array<Perf, kMaxAlgorithms> found{};
  int count = 0;
  if (Status s = cudnn.check(query(kMaxAlgorithms, &count, found.data()), call); !s.is_ok())
    return s;
  return std::vector<Perf>(found.begin(), found.begin() + count);
}

template <class Perf>
Result<CudnnAlgorithm> first_allowed(const CudnnLibrary& cudnn,
                                     const std::vector<Perf>& candidates,
                                     cudnnConvolutionDescriptor_t convolution, DataType dtype,
                                     bool allow_tf32) {
  std::string declined;
  for (const Perf& p : candidates) {
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    if (!math_type_allowed(p.mathType, dtype, allow_tf32)) {
      declined += fmt::format(" algorithm {} needs {} math;", static_cast<int>(p.algo),
                              math_name(p.mathType));
      continue;
    }
    if (Status s = cudnn.check(cudnn.api().set_math_type(convolution, p.mathType),
                               "cudnnSetConvolutionMathType");
        !s.is_ok())
      return s;
    CudnnAlgorithm out{static_cast<int>(p.algo), p.memory, p.mathType,
                       p.determinism == CUDNN_DETERMINISTIC, ""};
    out.summary = fmt::format("algorithm {} ({} math{}), {} B workspace", out.algorithm,
                              math_name(out.math), out.deterministic ? "" : ", non-deterministic",
                              out.workspace_bytes);
    return out;
  }
  return Status::unsupported(fmt::format(
      "cuDNN's heuristics offer no usable algorithm:{}{}", declined.empty() ? " none works" : declined,
      dtype == DataType::f32 && !allow_tf32 ? " (CONVJIT_ALLOW_TF32=1 would allow TF32)" : ""));
}

}  // namespace

cudnnMathType_t initial_math_type(DataType dtype, bool allow_tf32) {
  if (dtype == DataType::f32 || dtype == DataType::f64)
    return allow_tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  return CUDNN_TENSOR_OP_MATH;
}

bool math_type_allowed(cudnnMathType_t math, DataType dtype, bool allow_tf32) {
  // CUDNN_DEFAULT_MATH permits TF32 on Ampere and later, so for f32 only
  // FMA kernels are certain to compute in full precision.
  if (dtype == DataType::f32 && !allow_tf32) return math == CUDNN_FMA_MATH;
  return true;
}

Result<CudnnAlgorithm> choose_cudnn_algorithm(const CudnnLibrary& cudnn, cudnnHandle_t handle,
                                              const CudnnConvolutionOperands& ops,
                                              Direction direction, DataType dtype,
                                              bool allow_tf32) {
  const CudnnApi& api = cudnn.api();
  switch (direction) {
    case Direction::bwddata: {
      auto found = ranked<cudnnConvolutionBwdDataAlgoPerf_t>(
          cudnn,
          [&](int n, int* count, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
            return api.backward_data_algorithms(handle, ops.w, ops.y, ops.convolution, ops.x, n,
                                                count, perf);
          },
          "cudnnGetConvolutionBackwardDataAlgorithm_v7");
      if (!found.is_ok()) return found.status();
      return first_allowed(cudnn, found.value(), ops.convolution, dtype, allow_tf32);
    }
    case Direction::bwdfilt: {
      auto found = ranked<cudnnConvolutionBwdFilterAlgoPerf_t>(
          cudnn,
          [&](int n, int* count, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
            return api.backward_filter_algorithms(handle, ops.x, ops.y, ops.convolution, ops.w, n,
                                                  count, perf);
          },
          "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
      if (!found.is_ok()) return found.status();
      return first_allowed(cudnn, found.value(), ops.convolution, dtype, allow_tf32);
    }
    default: {
      auto found = ranked<cudnnConvolutionFwdAlgoPerf_t>(
          cudnn,
          [&](int n, int* count, cudnnConvolutionFwdAlgoPerf_t* perf) {
            return api.forward_algorithms(handle, ops.x, ops.w, ops.convolution, ops.y, n, count,
                                          perf);
          },
          "cudnnGetConvolutionForwardAlgorithm_v7");
      if (!found.is_ok()) return found.status();
      return first_allowed(cudnn, found.value(), ops.convolution, dtype, allow_tf32);
    }
  }
}

}  // namespace convjit
