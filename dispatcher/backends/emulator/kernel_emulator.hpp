// Runs a descriptor's kernels through the host emulator exactly as the JIT
// launches them on a GPU: the same entries, in order, with the same grid
// and block sizes (kernel_source.hpp), the same Problem constants and the
// same workspace size.
#pragma once

#include <cstddef>

#include "convjit/status.hpp"
#include "dispatcher/backends/emulator/emulated_buffers.hpp"
#include "dispatcher/backends/emulator/emulated_template.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"

namespace convjit::emulator {

struct EmulatedOperand {
  const BufferSpec* spec = nullptr;
  const void* data = nullptr;  // the caller's tensor; null passes a null pointer
};

struct EmulatedLaunch {
  const EmulatedTemplate* kernels = nullptr;
  const KernelSource* source = nullptr;
  EmulatedOperand in0, in1;
  EmulatedOperand bias, residual;  // a conv fwd's epilogue operands; null where unused
  EmulatedOperand out;              // data: the caller's output, read when beta != 0
  void* out_destination = nullptr;  // written only when the launch is clean
  float alpha = 1.0f, beta = 0.0f;
};

// OK, or EXECUTION_FAILED listing the violations (the output is then left
// untouched).  Launches run one at a time: the Problem constants are
// process-wide.
[[nodiscard]] Status emulate(const EmulatedLaunch& launch);

}  // namespace convjit::emulator
