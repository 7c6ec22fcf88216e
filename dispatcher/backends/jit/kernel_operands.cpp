#include "dispatcher/backends/jit/kernel_operands.hpp"

namespace convjit {

KernelInputs kernel_inputs(const OpDescriptor& d) {
  using enum KernelInput;
  if (d.kind == OpKind::bias_grad) return {none, dy};
  if (d.kind == OpKind::pool) return {x, d.direction == Direction::fwd ? none : dy};
  if (d.kind == OpKind::batchnorm) return {x, d.direction == Direction::fwd ? none : dy};
  if (d.kind == OpKind::resize) return d.direction == Direction::fwd ? KernelInputs{x, none}
                                                                      : KernelInputs{none, dy};
  if (d.direction == Direction::bwddata) return {dy, w};
  if (d.direction == Direction::bwdfilt) return {x, dy};
  return {x, w};
}

const void* input_pointer(const ExecArgs& args, KernelInput input) {
  switch (input) {
    case KernelInput::x:
      return args.x;
    case KernelInput::w:
      return args.w;
    case KernelInput::dy:
      return args.dy;
    case KernelInput::none:
      break;
  }
  return nullptr;
}

Status check_epilogue_operands(const OpDescriptor& d, const ExecArgs& args) {
  if (d.has_bias() && args.bias == nullptr)
    return Status::invalid("the descriptor's epilogue adds a bias, but the bias pointer is null");
  if (d.has_residual() && args.residual == nullptr)
    return Status::invalid(
        "the descriptor's epilogue adds a residual, but the residual pointer is null");
  return Status::ok();
}

const char* input_name(KernelInput input) {
  switch (input) {
    case KernelInput::x:
      return "x";
    case KernelInput::w:
      return "w";
    case KernelInput::dy:
      return "dy";
    case KernelInput::none:
      break;
  }
  return "unused";
}

Slot input_slot(KernelInput input) {
  switch (input) {
    case KernelInput::w:
      return Slot::w;
    case KernelInput::dy:
      return Slot::y;
    default:
      return Slot::x;
  }
}

}  // namespace convjit
