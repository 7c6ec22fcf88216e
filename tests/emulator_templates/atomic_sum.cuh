// Test-only template (f32): sums in0 (P::N elements) with atomics.
// convjit_kernel zeroes out[0] and out[1]; convjit_kernel_finish adds every
// element to out[0] with a global atomicAdd, and to out[1] through a
// per-block total built with shared-memory atomics.
#include "common/grid.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* /*in0*/,
                              const convjit_device::storage_t* /*in1*/,
                              convjit_device::storage_t* out, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  if (thread_index() < 2) out[thread_index()] = store(0.0f);
}

CONVJIT_KERNEL convjit_kernel_finish(const convjit_device::storage_t* in0,
                                     const convjit_device::storage_t* /*in1*/,
                                     convjit_device::storage_t* out, float /*alpha*/,
                                     float /*beta*/, convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  CONVJIT_SHARED_ARRAY(float, block_total, 1);
  if (threadIdx.x == 0) block_total[0] = 0.0f;
  __syncthreads();
  const index_t i = thread_index();
  const float value = i < P::N ? load(in0[i]) : 0.0f;
  atomicAdd(&out[0], value);
  atomicAdd(&block_total[0], value);
  __syncthreads();
  if (threadIdx.x == 0) atomicAdd(&out[1], static_cast<float>(block_total[0]));
}
