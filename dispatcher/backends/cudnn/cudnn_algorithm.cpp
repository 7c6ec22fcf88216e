#include "dispatcher/backends/cudnn/cudnn_algorithm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

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

// The heuristics' ranked list for one direction, in the common form.
template <class Perf, class Query>
Result<std::vector<CudnnAlgorithmPerf>> ranked(const CudnnLibrary& cudnn, Query query,
                                               const char* call) {
  std::array<Perf, kMaxAlgorithms> found{};
  int count = 0;
  if (Status s = cudnn.check(query(kMaxAlgorithms, &count, found.data()), call); !s.is_ok())
    return s;
  std::vector<CudnnAlgorithmPerf> out;
  for (int i = 0; i < std::min(count, kMaxAlgorithms); ++i) {
    const Perf& p = found[static_cast<std::size_t>(i)];
    out.push_back({static_cast<int>(p.algo), p.status, p.mathType, p.memory, p.determinism});
  }
  return out;
}

Result<std::vector<CudnnAlgorithmPerf>> heuristics(const CudnnLibrary& cudnn, cudnnHandle_t handle,
                                                   const CudnnConvolutionOperands& ops,
                                                   Direction direction) {
  const CudnnApi& api = cudnn.api();
  switch (direction) {
    case Direction::bwddata:
      return ranked<cudnnConvolutionBwdDataAlgoPerf_t>(
          cudnn,
          [&](int n, int* count, cudnnConvolutionBwdDataAlgoPerf_t* perf) {
            return api.backward_data_algorithms(handle, ops.w, ops.y, ops.convolution, ops.x, n,
                                                count, perf);
          },
          "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    case Direction::bwdfilt:
      return ranked<cudnnConvolutionBwdFilterAlgoPerf_t>(
          cudnn,
          [&](int n, int* count, cudnnConvolutionBwdFilterAlgoPerf_t* perf) {
            return api.backward_filter_algorithms(handle, ops.x, ops.y, ops.convolution, ops.w, n,
                                                  count, perf);
          },
          "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    default:
      return ranked<cudnnConvolutionFwdAlgoPerf_t>(
          cudnn,
          [&](int n, int* count, cudnnConvolutionFwdAlgoPerf_t* perf) {
            return api.forward_algorithms(handle, ops.x, ops.w, ops.convolution, ops.y, n, count,
                                          perf);
          },
          "cudnnGetConvolutionForwardAlgorithm_v7");
  }
}

}  // namespace

std::string CudnnAlgorithm::id() const {
  std::string math_id(math_name(math));
  std::replace(math_id.begin(), math_id.end(), ' ', '-');
  std::transform(math_id.begin(), math_id.end(), math_id.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return fmt::format("algo{}-{}", algorithm, math_id);
}

std::string CudnnAlgorithm::summary() const {
  return fmt::format("algorithm {} ({} math{}), {} B workspace", algorithm, math_name(math),
                     deterministic ? "" : ", non-deterministic", workspace_bytes);
}

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

Result<std::vector<CudnnAlgorithm>> usable_cudnn_algorithms(
    std::span<const CudnnAlgorithmPerf> ranked, DataType dtype, bool allow_tf32,
    const char* (*status_name)(cudnnStatus_t)) {
  std::vector<CudnnAlgorithm> usable;
  std::string declined;
  for (const CudnnAlgorithmPerf& p : ranked) {
    if (p.status != CUDNN_STATUS_SUCCESS) {
      // Which status matters: a whole direction failing with one (a
      // missing sub-library, say) is a setup problem, not the shape's.
      const char* name = status_name != nullptr ? status_name(p.status) : nullptr;
      declined += fmt::format("{}algorithm {} ({} math) failed with status {}{}",
                              declined.empty() ? "" : "; ", p.algorithm, math_name(p.math),
                              static_cast<int>(p.status),
                              name != nullptr ? fmt::format(" ({})", name) : "");
      continue;
    }
    if (!math_type_allowed(p.math, dtype, allow_tf32)) {
      declined += fmt::format("{}algorithm {} needs {} math", declined.empty() ? "" : "; ",
                              p.algorithm, math_name(p.math));
      continue;
    }
    const CudnnAlgorithm a{p.algorithm, p.memory, p.math, p.determinism == CUDNN_DETERMINISTIC};
    const bool listed = std::any_of(usable.begin(), usable.end(), [&](const CudnnAlgorithm& u) {
      return u.algorithm == a.algorithm && u.math == a.math;
    });
    if (!listed) usable.push_back(a);
  }
  if (!usable.empty()) return usable;
  return Status::unsupported(fmt::format(
      "cuDNN's heuristics offer no usable algorithm: {}{}", declined.empty() ? "none works" : declined,
      dtype == DataType::f32 && !allow_tf32 ? " (CONVJIT_ALLOW_TF32=1 would allow TF32)" : ""));
}

Result<std::vector<CudnnAlgorithm>> ranked_cudnn_algorithms(const CudnnLibrary& cudnn,
                                                            cudnnHandle_t handle,
                                                            const CudnnConvolutionOperands& ops,
                                                            Direction direction, DataType dtype,
                                                            bool allow_tf32) {
  auto found = heuristics(cudnn, handle, ops, direction);
  if (!found.is_ok()) return found.status();
  return usable_cudnn_algorithms(found.value(), dtype, allow_tf32, cudnn.api().get_error_string);
}

Result<std::size_t> cudnn_workspace_size(const CudnnLibrary& cudnn, cudnnHandle_t handle,
                                         const CudnnConvolutionOperands& ops, Direction direction,
                                         int algorithm) {
  const CudnnApi& api = cudnn.api();
  std::size_t bytes = 0;
  Status s;
  switch (direction) {
    case Direction::bwddata:
      s = cudnn.check(api.backward_data_workspace_size(
                          handle, ops.w, ops.y, ops.convolution, ops.x,
                          static_cast<cudnnConvolutionBwdDataAlgo_t>(algorithm), &bytes),
                      "cudnnGetConvolutionBackwardDataWorkspaceSize");
      break;
    case Direction::bwdfilt:
      s = cudnn.check(api.backward_filter_workspace_size(
                          handle, ops.x, ops.y, ops.convolution, ops.w,
                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algorithm), &bytes),
                      "cudnnGetConvolutionBackwardFilterWorkspaceSize");
      break;
    default:
      s = cudnn.check(api.forward_workspace_size(handle, ops.x, ops.w, ops.convolution, ops.y,
                                                 static_cast<cudnnConvolutionFwdAlgo_t>(algorithm),
                                                 &bytes),
                      "cudnnGetConvolutionForwardWorkspaceSize");
  }
  if (!s.is_ok()) return s;
  return bytes;
}

std::size_t workspace_cap(std::size_t limit_bytes, std::size_t free_bytes) {
  return std::min(limit_bytes, free_bytes);
}

std::vector<CudnnAlgorithm> confirmed_cudnn_algorithms(std::span<const CudnnAlgorithm> ranked,
                                                       std::size_t cap,
                                                       const WorkspaceQuery& workspace_of,
                                                       std::string& passed_over) {
  std::vector<CudnnAlgorithm> confirmed;
  auto pass_over = [&](const CudnnAlgorithm& a, const std::string& why) {
    passed_over += fmt::format("{}{}: {}", passed_over.empty() ? "" : "; ", a.id(), why);
  };
  for (const CudnnAlgorithm& a : ranked) {
    auto bytes = workspace_of(a);
    if (!bytes.is_ok()) {
      pass_over(a, bytes.status().message());
      continue;
    }
    if (bytes.value() > cap) {
      pass_over(a, fmt::format("needs {} B of workspace, over the cap of {} B "
                               "(CONVJIT_CUDNN_WORKSPACE_LIMIT or the device's free memory)",
                               bytes.value(), cap));
      continue;
    }
    CudnnAlgorithm fitted = a;
    fitted.workspace_bytes = bytes.value();
    confirmed.push_back(fitted);
  }
  return confirmed;
}

}  // namespace convjit
