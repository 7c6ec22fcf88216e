// Test-only template (f32): the mbarrier wrappers (common/mbarrier.cuh),
// passing data between threads through mbarrier phases alone, with no
// __syncthreads() between a write and the reads it feeds.  Thread t of a
// block (element i of in0) runs three stages:
//   A: writes a[t] = in0[i], arrives on bars[0] (phase 0), waits for
//      parity 0 and writes out[3i] = a[t + 1];
//   B: writes b[t] = 2 in0[i], arrives on bars[1] expecting 4 transaction
//      bytes and completes 4 (as a TMA copy would), waits for parity 0
//      and writes out[3i + 1] = b[t + 2];
//   C: writes c[t] = 3 in0[i], arrives on bars[0] again (phase 1), waits
//      for parity 1 and writes
//      out[3i + 2] = c[t + 3];
// neighbours taken around the block.  Thread 0 then invalidates both
// barriers after a __syncthreads().  P::MODE plants a bug: 1 thread 5
// never arrives on bars[0]; 2 thread 7 expects 8 bytes and completes 4;
// 3 stage C waits for parity 0 (the wrong phase); 4 thread 0 arrives twice
// on bars[1]; 5 thread 0 inits bars[0] again without mbarrier.inval; 6 a
// plain store to bars[0]; 7 an expect_tx beyond the tx-count's range.
#include "common/grid.cuh"
#include "common/mbarrier.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* in0,
                              const convjit_device::storage_t* /*in1*/,
                              convjit_device::storage_t* out, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  CONVJIT_SHARED_ARRAY(mbarrier_t, bars, 2);
  CONVJIT_SHARED_ARRAY(float, a, P::BLOCK);
  CONVJIT_SHARED_ARRAY(float, b, P::BLOCK);
  CONVJIT_SHARED_ARRAY(float, c, P::BLOCK);
  const index_t i = thread_index();
  const unsigned t = threadIdx.x, n = static_cast<unsigned>(P::BLOCK);
  if (t == 0) {
    mbarrier_init(&bars[0], n);
    mbarrier_init(&bars[1], n);
    fence_mbarrier_init();
  }
  __syncthreads();
  if (P::MODE == 5 && t == 0) mbarrier_init(&bars[0], n);
  if (P::MODE == 6 && t == 0) bars[0] = 0ull;
  const float x = load(in0[i]);

  a[t] = x;
  if (!(P::MODE == 1 && t == 5)) mbarrier_arrive(&bars[0]);
  mbarrier_wait_parity(&bars[0], 0);
  out[3 * i] = store(a[(t + 1) % n]);

  b[t] = 2.0f * x;
  const unsigned expected = P::MODE == 2 && t == 7 ? 8u : P::MODE == 7 && t == 0 ? 1u << 20 : 4u;
  mbarrier_arrive_expect_tx(&bars[1], expected);
  if (P::MODE == 4 && t == 0) mbarrier_arrive(&bars[1]);
  mbarrier_complete_tx(&bars[1], 4);
  mbarrier_wait_parity(&bars[1], 0);
  out[3 * i + 1] = store(b[(t + 2) % n]);

  c[t] = 3.0f * x;
  mbarrier_arrive(&bars[0]);
  mbarrier_wait_parity(&bars[0], P::MODE == 3 ? 0u : 1u);
  out[3 * i + 2] = store(c[(t + 3) % n]);

  __syncthreads();
  if (t == 0) {
    mbarrier_inval(&bars[0]);
    mbarrier_inval(&bars[1]);
  }
}
