// Tensor maps: what a TMA copy (common/tma.cuh) reads its tensor's shape,
// strides, box and swizzle from.  The host encodes them per launch
// (dispatcher/tensor_maps/), and a kernel that copies with TMA takes them
// as one more parameter after the workspace:
//   ..., scratch_t* workspace, const CONVJIT_GRID_CONSTANT tensor_maps_t maps)
// __grid_constant__ keeps the parameter in the constant bank, where the
// copy engine reads a map through its address.  In the emulator a map is
// the host's validated description of it.
#pragma once
#include "common/kernel_abi.cuh"

#ifndef CONVJIT_GRID_CONSTANT
#define CONVJIT_GRID_CONSTANT __grid_constant__
#endif

namespace convjit_device {

// As many as dispatcher/backends/emulator/emulated_tensor_maps.hpp's
// kMaxTensorMaps.
constexpr int kMaxTensorMaps = 4;

#if defined(CONVJIT_EMULATOR)
typedef ::convjit::emulator::EmulatedTensorMap tensor_map_t;
typedef ::convjit::emulator::EmulatedTensorMaps tensor_maps_t;
#else
// CUtensorMap's layout (cuda.h), which NVRTC does not include.
struct alignas(64) tensor_map_t {
  unsigned long long opaque[16];
};
struct tensor_maps_t {
  tensor_map_t map[kMaxTensorMaps];
};
#endif

}  // namespace convjit_device
