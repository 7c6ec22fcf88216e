// A tensor map a kernel takes (kernel_templates/common/tensor_map.cuh) over
// one of its launch's operands.  The kernel's source declares the maps
// (KernelSource::tensor_maps); their global addresses are the call's, so
// each launch binds them anew: the JIT encodes them through the driver, the
// emulator validates them as the driver would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "convjit/status.hpp"
#include "dispatcher/tensor_maps/tensor_map_spec.hpp"

namespace convjit {

// As many as kernel_templates/common/tensor_map.cuh's kMaxTensorMaps.
inline constexpr unsigned kMaxTensorMaps = 4;

struct TensorMapArgument {
  enum class Operand : std::uint8_t { in0, in1, out, workspace };
  TensorMapSpec spec;  // its global_address is set per launch
  Operand operand = Operand::in0;
  std::size_t byte_offset = 0;  // from the operand's pointer
};

// A launch's operand pointers, in the kernel ABI's order.
struct TensorMapOperands {
  const void* in0 = nullptr;
  const void* in1 = nullptr;
  const void* out = nullptr;
  const void* workspace = nullptr;
};

// `argument`'s spec with its global address at the operand's pointer plus
// the offset (null where the operand is).
[[nodiscard]] inline TensorMapSpec bound_spec(const TensorMapArgument& argument,
                                              const TensorMapOperands& operands) {
  using Operand = TensorMapArgument::Operand;
  const void* base = argument.operand == Operand::in0   ? operands.in0
                     : argument.operand == Operand::in1 ? operands.in1
                     : argument.operand == Operand::out ? operands.out
                                                        : operands.workspace;
  TensorMapSpec spec = argument.spec;
  spec.global_address =
      base == nullptr ? nullptr : static_cast<const std::byte*>(base) + argument.byte_offset;
  return spec;
}

// Whether every map's address, bound to these operands, is aligned as TMA
// needs (global_address_alignment): what a kernel's fallback for views one
// element into a larger tensor tests per call, before anything is encoded.
[[nodiscard]] bool tensor_maps_aligned(std::span<const TensorMapArgument> arguments,
                                       const TensorMapOperands& operands);

// Whether the kernel stores its output through one of its maps (the
// Hopper conv's TMA store): it writes alpha times its result without
// reading the output, so it serves launches of beta 0 alone.
[[nodiscard]] bool stores_output_by_tma(std::span<const TensorMapArgument> arguments);

// Ok where the kernel serves a launch blending its output by `beta`;
// else why not, and what serves it.
[[nodiscard]] Status check_output_beta(std::span<const TensorMapArgument> arguments, double beta);

// A launch's maps bound to its operands into `specs`, each checked by the
// driver's rules (validate_tensor_map), as the JIT encodes them and the
// emulator runs them; the error names the map.
[[nodiscard]] Status bind_tensor_maps(std::span<const TensorMapArgument> arguments,
                                      const TensorMapOperands& operands,
                                      std::span<TensorMapSpec, kMaxTensorMaps> specs);

}  // namespace convjit
