// Test-only template: each block sums its P::BLOCK elements of in0 into
// out[block] through a tree in shared memory, with the barrier bug P::MODE
// selects planted, for the emulator to catch.
//   0 none   1 no barrier between the shared stores and the tree
//   2 odd threads return before the first barrier (divergence)
//   3 indexes the shared array one past its end
#include "common/kernel_abi.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* in0,
                              const convjit_device::storage_t* /*in1*/,
                              convjit_device::storage_t* out, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  CONVJIT_SHARED_ARRAY(float, partial, P::BLOCK);
  const index_t lane = threadIdx.x;
  partial[lane] = load(in0[blockIdx.x * P::BLOCK + lane]);
  if (P::MODE == 2 && lane % 2 == 1) return;
  if (P::MODE != 1) __syncthreads();
  for (index_t half = P::BLOCK / 2; half > 0; half /= 2) {
    const index_t other = P::MODE == 3 && half == 1 ? P::BLOCK : lane + half;
    if (lane < half) partial[lane] += partial[other];
    __syncthreads();
  }
  if (lane == 0) out[blockIdx.x] = store(partial[0]);
}
