// The run-time operands of one operation.  Which pointers an op reads
// follows the descriptor's slots (op_descriptor.hpp).
#pragma once

#include <cstddef>

namespace convjit {

struct ExecArgs {
  const void* x = nullptr;   // x: conv fwd and bwdfilt, pool fwd and max-pool bwd
  const void* w = nullptr;   // w: conv fwd and bwddata
  const void* dy = nullptr;  // dy: conv bwddata and bwdfilt, pool bwd, bias grad
  void* out = nullptr;       // y, dx, dw or db, as the direction says
  // A conv fwd's fused epilogue operands, as the descriptor's epilogue names them.
  const void* bias = nullptr;      // K elements
  const void* residual = nullptr;  // y's shape and strides
  double alpha = 1.0;
  double beta = 0.0;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  void* stream = nullptr;  // CUstream on a CUDA device; null on the host
};

}  // namespace convjit
