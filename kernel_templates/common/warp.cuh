// A block's threads as warps of 32.  The warp collectives themselves are
// CUDA's own (__shfl_sync and friends, __ballot_sync, __any_sync,
// __all_sync, __syncwarp, __activemask); the emulator implements them with
// the same names and checks that every lane a mask names arrives.
#pragma once
#include "common/kernel_abi.cuh"

namespace convjit_device {

constexpr unsigned kWarpSize = 32;
constexpr unsigned kFullMask = 0xffffffffu;

__device__ __forceinline__ unsigned lane_id() { return threadIdx.x % kWarpSize; }
__device__ __forceinline__ unsigned warp_id() { return threadIdx.x / kWarpSize; }

#if !defined(CONVJIT_EMULATOR)
// A shared-memory pointer as the 32-bit address PTX's .shared state space
// takes.
__device__ __forceinline__ unsigned shared_address(const void* p) {
  return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
#endif

}  // namespace convjit_device
