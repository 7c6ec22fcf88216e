// Where a thread sits in the launch grid.
#pragma once
#include "common/kernel_abi.cuh"

namespace convjit_device {

// Global thread index and count, 64-bit: grid-stride loops cover any size.
__device__ __forceinline__ index_t thread_index() {
  return static_cast<index_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ index_t thread_count() {
  return static_cast<index_t>(gridDim.x) * blockDim.x;
}

}  // namespace convjit_device
