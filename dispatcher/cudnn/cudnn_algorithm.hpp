// Choosing cuDNN convolution algorithms with cuDNN's heuristics, under
// convjit's math rule: f32 uses FMA kernels only, unless TF32 is allowed.
// The heuristics' first usable algorithm serves a descriptor by default;
// the `tuned` policy and `convjit bench` measure every usable one.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "cudnn/cudnn_descriptors.hpp"
#include "op_descriptor.hpp"

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
// out when none is usable.
[[nodiscard]] Result<std::vector<CudnnAlgorithm>> usable_cudnn_algorithms(
    std::span<const CudnnAlgorithmPerf> ranked, DataType dtype, bool allow_tf32);

// The heuristics' usable algorithms for `direction`, best first.
[[nodiscard]] Result<std::vector<CudnnAlgorithm>> ranked_cudnn_algorithms(
    const CudnnLibrary& cudnn, cudnnHandle_t handle, const CudnnConvolutionOperands& ops,
    Direction direction, DataType dtype, bool allow_tf32);

}  // namespace convjit
