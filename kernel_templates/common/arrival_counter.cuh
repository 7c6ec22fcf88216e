// An arrival counter: an f32 in global memory, zero before the kernel,
// that the blocks sharing a piece of work count themselves on once each
// has written its share.  A block's threads fence their writes and meet
// at a barrier; one thread then counts the block.  The last to count
// sees every share: its threads fence again before they read them, from
// the L2 (load_128_l2).  No block waits for another, so the grid need
// not be resident at once (the pattern of CUDA's threadFenceReduction
// sample).  The emulator orders the reads it checks for races through
// the counts (a block reads the writes of those that counted before it on
// the same counter) and takes the fences on trust; where it runs a few
// blocks alone to count their memory accesses, every arrival is the last.
#pragma once
#include "common/kernel_abi.cuh"

namespace convjit_device {

// Counts the calling block on `counter`, which `arrivals` blocks share:
// true for the last of them.
__device__ __forceinline__ bool arrives_last(scratch_t* counter, index_t arrivals) {
#if defined(CONVJIT_EMULATOR)
  return ::convjit::emulated::arrives_last_on(counter, arrivals);
#else
  __threadfence();
  return atomicAdd(counter, 1.0f) == static_cast<float>(arrivals - 1);
#endif
}

}  // namespace convjit_device
