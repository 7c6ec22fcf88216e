#include "dispatcher/tensor_maps/tensor_map_argument.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

namespace convjit {

namespace {

// The kernel ABI's names (kernel_templates/common/kernel_abi.cuh).
const char* operand_name(TensorMapArgument::Operand operand) {
  switch (operand) {
    case TensorMapArgument::Operand::in0:
      return "in0";
    case TensorMapArgument::Operand::in1:
      return "in1";
    case TensorMapArgument::Operand::out:
      return "out";
    case TensorMapArgument::Operand::workspace:
      return "workspace";
  }
  return "operand";
}

}  // namespace

bool tensor_maps_aligned(std::span<const TensorMapArgument> arguments,
                         const TensorMapOperands& operands) {
  for (const TensorMapArgument& argument : arguments) {
    const TensorMapSpec spec = bound_spec(argument, operands);
    const auto address = reinterpret_cast<std::uintptr_t>(spec.global_address);
    if (address % global_address_alignment(spec) != 0) return false;
  }
  return true;
}

bool stores_output_by_tma(std::span<const TensorMapArgument> arguments) {
  return std::any_of(arguments.begin(), arguments.end(), [](const TensorMapArgument& a) {
    return a.operand == TensorMapArgument::Operand::out;
  });
}

Status check_output_beta(std::span<const TensorMapArgument> arguments, double beta) {
  if (beta == 0.0 || !stores_output_by_tma(arguments)) return Status::ok();
  return Status::unsupported(fmt::format(
      "beta is {} but this kernel stores its output by TMA without reading it, so it serves "
      "beta = 0 alone: the JIT backend runs such a call on the kernel's TMA fallback; to run "
      "this variant with beta, set CONVJIT_WGMMA_TMA_STORE=0",
      beta));
}

Status bind_tensor_maps(std::span<const TensorMapArgument> arguments,
                        const TensorMapOperands& operands,
                        std::span<TensorMapSpec, kMaxTensorMaps> specs) {
  if (arguments.size() > kMaxTensorMaps)
    return Status::invalid(fmt::format("the launch has {} tensor maps; a kernel takes at most {}",
                                       arguments.size(), kMaxTensorMaps));
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    specs[i] = bound_spec(arguments[i], operands);
    if (Status s = validate_tensor_map(specs[i]); !s.is_ok())
      return Status::invalid(fmt::format(
          "tensor map {} (over the kernel's {}): {}; this variant reads it with TMA: pass "
          "operands that meet TMA's rules, or choose a variant without TMA",
          i, operand_name(arguments[i].operand), s.message()));
  }
  return Status::ok();
}

}  // namespace convjit
