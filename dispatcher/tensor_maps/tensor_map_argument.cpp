#include "dispatcher/tensor_maps/tensor_map_argument.hpp"

#include <fmt/format.h>

namespace convjit {

Status bind_tensor_maps(std::span<const TensorMapArgument> arguments,
                        const TensorMapOperands& operands,
                        std::span<TensorMapSpec, kMaxTensorMaps> specs) {
  if (arguments.size() > kMaxTensorMaps)
    return Status::invalid(fmt::format("the launch has {} tensor maps; a kernel takes at most {}",
                                       arguments.size(), kMaxTensorMaps));
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    specs[i] = bound_spec(arguments[i], operands);
    if (Status s = validate_tensor_map(specs[i]); !s.is_ok())
      return Status::invalid(fmt::format("tensor map {}: {}", i, s.message()));
  }
  return Status::ok();
}

}  // namespace convjit
