// Choosing a cuDNN convolution algorithm with cuDNN's heuristics, under
// convjit's math rule: f32 uses FMA kernels only, unless TF32 is allowed.
#pragma once

#include <cstddef>
#include <string>

#include "cudnn/cudnn_descriptors.hpp"
#include "op_descriptor.hpp"

namespace convjit {

struct CudnnConvolutionOperands {
  cudnnTensorDescriptor_t x = nullptr;  // x or dx
  cudnnFilterDescriptor_t w = nullptr;  // w or dw
  cudnnTensorDescriptor_t y = nullptr;  // y or dy
  cudnnConvolutionDescriptor_t convolution = nullptr;
};

struct CudnnAlgorithm {
  int algorithm = 0;  // a cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t of the direction
  std::size_t workspace_bytes = 0;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  bool deterministic = true;
  std::string summary;  // "algorithm 1 (FMA math), 4096 B workspace" for the log
};

// The math type a convolution descriptor starts with before the heuristics
// run: FMA for f32 unless TF32 is allowed, tensor cores for f16 and bf16.
[[nodiscard]] cudnnMathType_t initial_math_type(DataType dtype, bool allow_tf32);

// True when the heuristics' `math` obeys the rule for `dtype`.
[[nodiscard]] bool math_type_allowed(cudnnMathType_t math, DataType dtype, bool allow_tf32);

// The heuristics' first algorithm for `direction` that works and obeys the
// math rule; sets the descriptor's math type to the one it needs.
[[nodiscard]] Result<CudnnAlgorithm> choose_cudnn_algorithm(const CudnnLibrary& cudnn,
                                                            cudnnHandle_t handle,
                                                            const CudnnConvolutionOperands& ops,
                                                            Direction direction, DataType dtype,
                                                            bool allow_tf32);

}  // namespace convjit
