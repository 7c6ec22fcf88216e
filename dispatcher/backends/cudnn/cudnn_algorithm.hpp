// Choosing cuDNN convolution algorithms with cuDNN's heuristics, under
// convjit's math rule: f32 uses FMA kernels only, unless TF32 is allowed.
//
// Nothing about the choice may fail late, at execute, where no backend is
// left to fall back to.  So at build each algorithm, in the heuristics'
// order, must be confirmed by cuDNN's workspace query for these very
// descriptors (which refuses combinations it cannot run), must need no more
// workspace than the cap (CONVJIT_CUDNN_WORKSPACE_LIMIT, and never more
// than the device has free), and must get its workspace allocated; the
// first that passes serves the descriptor.  The `tuned` policy and
// `convjit bench` measure every one that passes the first two.
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "dispatcher/backends/cudnn/cudnn_descriptors.hpp"
#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit {

struct CudnnConvolutionOperands {
  cudnnTensorDescriptor_t x = nullptr;  // x or dx
  cudnnFilterDescriptor_t w = nullptr;  // w or dw
  cudnnTensorDescriptor_t y = nullptr;  // y or dy
  cudnnConvolutionDescriptor_t convolution = nullptr;
};

// One entry of the heuristics' list, whatever the direction's perf type.
struct CudnnAlgorithmPerf {
  int algorithm = 0;
  cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  std::size_t memory = 0;
  cudnnDeterminism_t determinism = CUDNN_DETERMINISTIC;
};

struct CudnnAlgorithm {
  int algorithm = 0;  // a cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t of the direction
  std::size_t workspace_bytes = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  bool deterministic = true;

  // Stable across processes, so a tuning decision can name it: "algo1-fma".
  [[nodiscard]] std::string id() const;
  // "algorithm 1 (FMA math), 4096 B workspace", for the log.
  [[nodiscard]] std::string summary() const;
};

// The math type a convolution descriptor starts with before the heuristics
// run: FMA for f32 unless TF32 is allowed, tensor cores for f16 and bf16.
[[nodiscard]] cudnnMathType_t initial_math_type(DataType dtype, bool allow_tf32);

// True when the heuristics' `math` obeys the rule for `dtype`.
[[nodiscard]] bool math_type_allowed(cudnnMathType_t math, DataType dtype, bool allow_tf32);

// The entries that work and obey the math rule, in the heuristics' order,
// each algorithm and math type once; UNSUPPORTED naming every entry left
// out, and why (its math, or the status cuDNN gave it, named by
// `status_name` when given: cudnnGetErrorString), when none is usable.
[[nodiscard]] Result<std::vector<CudnnAlgorithm>> usable_cudnn_algorithms(
    std::span<const CudnnAlgorithmPerf> ranked, DataType dtype, bool allow_tf32,
    const char* (*status_name)(cudnnStatus_t) = nullptr);

// The heuristics' usable algorithms for `direction`, best first.
[[nodiscard]] Result<std::vector<CudnnAlgorithm>> ranked_cudnn_algorithms(
    const CudnnLibrary& cudnn, cudnnHandle_t handle, const CudnnConvolutionOperands& ops,
    Direction direction, DataType dtype, bool allow_tf32);

// The workspace cuDNN says `algorithm` needs for these operands, or why it
// cannot run them (UNSUPPORTED for cuDNN's NOT_SUPPORTED kinds).
[[nodiscard]] Result<std::size_t> cudnn_workspace_size(const CudnnLibrary& cudnn,
                                                       cudnnHandle_t handle,
                                                       const CudnnConvolutionOperands& ops,
                                                       Direction direction, int algorithm);

// The workspace cap, as the build applies it: `limit_bytes` (the setting),
// lowered to `free_bytes` when the device has less free.
[[nodiscard]] std::size_t workspace_cap(std::size_t limit_bytes, std::size_t free_bytes);

using WorkspaceQuery = std::function<Result<std::size_t>(const CudnnAlgorithm&)>;

// The algorithms cuDNN confirms for these operands and whose workspace fits
// `cap`, in the heuristics' order, each with the workspace the query gave;
// every one left out is named, with the reason, in `passed_over`.
[[nodiscard]] std::vector<CudnnAlgorithm> confirmed_cudnn_algorithms(
    std::span<const CudnnAlgorithm> ranked, std::size_t cap, const WorkspaceQuery& workspace_of,
    std::string& passed_over);

// The first of `confirmed` that `make` turns into a product (a kernel whose
// workspace is allocated), or the last failure with every one passed over.
template <class Make>
auto first_workable_cudnn_algorithm(std::span<const CudnnAlgorithm> confirmed, Make make,
                                    std::string& passed_over)
    -> decltype(make(std::declval<const CudnnAlgorithm&>())) {
  Status last = Status::unsupported("cuDNN offers no algorithm that can run here");
  for (const CudnnAlgorithm& a : confirmed) {
    auto made = make(a);
    if (made.is_ok()) return made;
    last = made.status();
    passed_over += (passed_over.empty() ? "" : "; ") + a.id() + ": " + last.message();
  }
  return Status(last.code(), passed_over.empty() ? last.message()
                                                 : last.message() + " (passed over: " +
                                                       passed_over + ")");
}

}  // namespace convjit
