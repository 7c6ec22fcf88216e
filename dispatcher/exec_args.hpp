// The run-time operands of one operation.  Which pointers an op reads
// follows the descriptor's slots (op_descriptor.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace convjit {

// A batchnorm's per-channel operands: C contiguous elements of
// norm_param_dtype(dtype) each (op_descriptor.hpp).  Which are read or
// written follows the descriptor: scale and shift where its flags name
// them; the running statistics are read by inference and updated by a
// training fwd (when non-null); mean and invstd are written by a training
// fwd (when non-null) and read by a bwd, which in inference reads the
// running statistics instead.
struct NormOperands {
  const void* scale = nullptr;
  const void* shift = nullptr;
  void* running_mean = nullptr;
  void* running_var = nullptr;
  void* mean = nullptr;
  void* invstd = nullptr;
  void* scale_grad = nullptr;
  void* shift_grad = nullptr;
  double momentum = 0.1;  // the running update's (epsilon is the descriptor's)
};

struct ExecArgs {
  const void* x = nullptr;   // x: conv fwd and bwdfilt, pool fwd and max-pool bwd
  const void* w = nullptr;   // w: conv fwd and bwddata
  const void* dy = nullptr;  // dy: every bwd
  void* out = nullptr;       // y, dx, dw or db, as the direction says (a batchnorm bwd: dx or null)
  // A conv fwd's fused epilogue operands, as the descriptor's epilogue names them.
  const void* bias = nullptr;      // K elements
  const void* residual = nullptr;  // y's shape and strides
  NormOperands norm;               // batchnorm only
  double alpha = 1.0;
  double beta = 0.0;
  void* workspace = nullptr;
  std::size_t workspace_bytes = 0;
  void* stream = nullptr;  // CUstream on a CUDA device; null on the host
  // Nonzero: w is unchanged since the last call on this stream with this w
  // and version (convjit_exec_t::w_version, packed_filter_copies.hpp).
  std::uint64_t w_version = 0;
};

}  // namespace convjit
