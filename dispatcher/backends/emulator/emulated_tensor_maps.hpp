// A kernel's tensor maps in the emulator (kernel_templates/common/tensor_map.cuh):
// the launch's maps, validated as the driver validates them, with their
// global addresses in the launch's buffers.  Passed by value like the GPU's
// __grid_constant__ parameter; the maps themselves live in the launch.
#pragma once

#include "dispatcher/tensor_maps/tensor_map_argument.hpp"

namespace convjit::emulator {

struct EmulatedTensorMap {
  const TensorMapSpec* spec = nullptr;  // null: the launch set no map here
};

struct EmulatedTensorMaps {
  EmulatedTensorMap map[kMaxTensorMaps];
};

}  // namespace convjit::emulator
