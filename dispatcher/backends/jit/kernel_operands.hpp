// Which operands an op's kernel template takes as (in0, in1, out): conv
// fwd (x, w, y), bwddata (dy, w, dx), bwdfilt (x, dy, dw), pool fwd (x, -,
// y), pool bwd (x, dy, dx), bias gradient (-, dy, db), resize fwd (x, -,
// y) and bwd (-, dy, dx), batchnorm fwd (x, -, y) and bwd (x, dy, dx).  The JIT launch
// and the emulator both bind arguments through this one table.
#pragma once

#include <cstddef>
#include <type_traits>

#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/descriptor/operand_layout.hpp"
#include "dispatcher/exec_args.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

enum class KernelInput { none, x, w, dy };

struct KernelInputs {
  KernelInput in0, in1;
};

[[nodiscard]] KernelInputs kernel_inputs(const OpDescriptor& desc);

// The ExecArgs pointer an input takes (null for none).
[[nodiscard]] const void* input_pointer(const ExecArgs& args, KernelInput input);

// Whether the op's entries take (bias, residual) after the workspace: a
// conv fwd's do, whether or not its epilogue uses them.
[[nodiscard]] inline bool takes_epilogue_operands(const OpDescriptor& desc) {
  return desc.is_conv() && desc.direction == Direction::fwd;
}

// A batchnorm's entries take the call's NormOperands by value after the
// workspace: norm/batchnorm_common.cuh's NormParams is the same struct,
// member for member (f32 device pointers, null where the call has none,
// and the momentum), which these pin.
static_assert(std::is_standard_layout_v<NormOperands> &&
              sizeof(NormOperands) == 8 * sizeof(void*) + sizeof(double) &&
              offsetof(NormOperands, momentum) == 8 * sizeof(void*));

// Whether the op's entries take the NormOperands after the workspace.
[[nodiscard]] inline bool takes_norm_operands(const OpDescriptor& desc) {
  return desc.is_batchnorm();
}

// OK, or why `args` lacks an operand the descriptor's epilogue reads.
[[nodiscard]] Status check_epilogue_operands(const OpDescriptor& desc, const ExecArgs& args);

// "x", "w", "dy" ("unused" for none).
[[nodiscard]] const char* input_name(KernelInput input);

// The descriptor slot holding an input's shape (dy lives in the y slot).
[[nodiscard]] Slot input_slot(KernelInput input);

}  // namespace convjit
