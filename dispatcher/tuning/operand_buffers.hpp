// Host buffers holding random operands for one operation, as the tuned
// policy, `run --verify`, `bench` and `emulate` feed them to a backend and
// to the reference.
#pragma once

#include <random>
#include <span>
#include <vector>

#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/exec_args.hpp"

namespace convjit {

struct OperandBuffers {
  std::vector<unsigned char> x, w, dy, out;
  std::vector<unsigned char> bias, residual;  // a fused epilogue's, where it reads them
  // A batchnorm's per-channel operands (norm_param_dtype): scale, shift,
  // running mean and variance, saved mean and invstd, and the parameter
  // gradients.  The variance and invstd are positive.
  std::vector<unsigned char> scale, shift, running_mean, running_var, mean, invstd, scale_grad,
      shift_grad;
  ExecArgs args;  // over the buffers above; only what the op reads

  // Random inputs in [-1, 1]; the output zeroed.
  OperandBuffers(const OpDescriptor& desc, std::mt19937& rng);
};

// The largest |got - want| / max(1, |want|) over the elements; infinity
// when one is NaN and the other not.
[[nodiscard]] double max_relative_error(std::span<const unsigned char> got,
                                        std::span<const unsigned char> want, DataType dtype);

}  // namespace convjit
