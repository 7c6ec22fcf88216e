// Test-only template (f32): thread t of a block fills tile[8t .. 8t+7]
// from in0[8i ...] with cp.async, in two groups:
//   group 1: a 16-byte cp.async.cg of elements 0-3;
//   group 2: an 8-byte cp.async.ca of element 4 with element 5 zero-filled
//            (source size 4), a 4-byte one of element 6, and a 4-byte one
//            of element 7 with source size 0 (all zeros).
// It waits for group 1 (wait_group 1), checks its own elements 0-3 landed,
// waits for all, and after a barrier writes its right neighbour's eight
// elements to out[8i ...].  P::MODE plants a bug: 1 no wait before the
// barrier (reads before the data lands), 2 writes tile[8t] while its copy
// is in flight, 3 returns without waiting.
#include "common/cp_async.cuh"
#include "common/grid.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* in0,
                              const convjit_device::storage_t* /*in1*/,
                              convjit_device::storage_t* out, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  CONVJIT_SHARED_ARRAY(float, tile, 8 * P::BLOCK);
  const index_t i = thread_index(), t = threadIdx.x;
  const storage_t* src = in0 + 8 * i;
  cp_async_cg(&tile[8 * t], src);
  cp_async_commit();
  if (P::MODE == 2) tile[8 * t] = 0.0f;
  cp_async_ca<8>(&tile[8 * t + 4], src + 4, 4);
  cp_async_ca<4>(&tile[8 * t + 6], src + 6);
  cp_async_ca<4>(&tile[8 * t + 7], src + 7, 0);
  cp_async_commit();
  if (P::MODE == 3) return;
  if (P::MODE != 1) {
    cp_async_wait<1>();
    float own = 0.0f;
    for (int k = 0; k < 4; ++k) own += tile[8 * t + k] == load(src[k]) ? 1.0f : 0.0f;
    if (own != 4.0f) return;  // leaves out unwritten: the test reports it
    cp_async_wait<0>();
  }
  __syncthreads();
  const index_t from = 8 * ((t + 1) % P::BLOCK);
  for (int k = 0; k < 8; ++k) out[8 * i + k] = store(tile[from + k]);
}
