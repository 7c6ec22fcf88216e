// mbarrier: a barrier object in shared memory that counts arrivals and
// bytes of asynchronous transactions (TMA copies) per phase (sm_90 for the
// transaction counts; the PTX ISA's mbarrier section).  One thread inits it
// with the arrivals each phase expects, then a fence_mbarrier_init() and a
// __syncthreads() publish it.  A phase completes once every expected
// arrival came and the transaction count is back to zero; waiters test the
// parity of the phase they wait for (0 for phases 0, 2, ...).  Memory the
// barrier used needs mbarrier_inval() before any other use.
//
// Data written before an arrival is visible to a thread that waited for
// that phase.  mbarrier_arrive_cluster() arrives on another block's
// barrier of the cluster (common/cluster.cuh).  In the emulator each operation is checked:
// undefined uses are reported, a wait suspends until its phase completes, a wait that can never end
// is reported as a deadlock, and the race checker orders accesses through the phases.
#pragma once
#include "common/cluster.cuh"
#include "common/warp.cuh"

namespace convjit_device {

typedef unsigned long long mbarrier_t;

#if defined(CONVJIT_EMULATOR)
template <class Barrier>
__device__ __forceinline__ void mbarrier_init(Barrier bar, unsigned count) {
  ::convjit::emulated::mbarrier_ops::init(bar, count);
}
__device__ __forceinline__ void fence_mbarrier_init() {}  // the emulator's init is seen at once
template <class Barrier>
__device__ __forceinline__ mbarrier_t mbarrier_arrive(Barrier bar) {
  return ::convjit::emulated::mbarrier_ops::arrive(bar, 0);
}
template <class Barrier>
__device__ __forceinline__ mbarrier_t mbarrier_arrive_expect_tx(Barrier bar, unsigned bytes) {
  return ::convjit::emulated::mbarrier_ops::arrive(bar, bytes);
}
template <class Barrier>
__device__ __forceinline__ void mbarrier_arrive_cluster(Barrier bar) {
  (void)::convjit::emulated::mbarrier_ops::arrive_cluster(bar);
}
template <class Barrier>
__device__ __forceinline__ void mbarrier_expect_tx(Barrier bar, unsigned bytes) {
  ::convjit::emulated::mbarrier_ops::expect_tx(bar, bytes);
}
template <class Barrier>
__device__ __forceinline__ void mbarrier_complete_tx(Barrier bar, unsigned bytes) {
  ::convjit::emulated::mbarrier_ops::complete_tx(bar, bytes);
}
template <class Barrier>
__device__ __forceinline__ bool mbarrier_try_wait_parity(Barrier bar, unsigned parity) {
  return ::convjit::emulated::mbarrier_ops::try_wait_parity(bar, parity);
}
template <class Barrier>
__device__ __forceinline__ void mbarrier_inval(Barrier bar) {
  ::convjit::emulated::mbarrier_ops::inval(bar);
}
#else
__device__ __forceinline__ void mbarrier_init(mbarrier_t* bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(shared_address(bar)), "r"(count)
               : "memory");
}
// Makes the inits visible to the other threads and to the async proxy
// (TMA) before the __syncthreads() that follows.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}
__device__ __forceinline__ mbarrier_t mbarrier_arrive(mbarrier_t* bar) {
  mbarrier_t state;
  asm volatile("mbarrier.arrive.shared::cta.b64 %0, [%1];\n"
               : "=l"(state)
               : "r"(shared_address(bar))
               : "memory");
  return state;
}
__device__ __forceinline__ mbarrier_t mbarrier_arrive_expect_tx(mbarrier_t* bar, unsigned bytes) {
  mbarrier_t state;
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 %0, [%1], %2;\n"
               : "=l"(state)
               : "r"(shared_address(bar)), "r"(bytes)
               : "memory");
  return state;
}
// An arrival on another block's barrier (cluster_map's address,
// common/cluster.cuh), releasing this thread's accesses to the cluster.
__device__ __forceinline__ void mbarrier_arrive_cluster(cluster_ptr<mbarrier_t> bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];\n" ::"r"(bar.address)
               : "memory");
}
__device__ __forceinline__ void mbarrier_expect_tx(mbarrier_t* bar, unsigned bytes) {
  asm volatile("mbarrier.expect_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(
                   shared_address(bar)),
               "r"(bytes)
               : "memory");
}
// What a TMA copy does as its bytes land; exposed for tests.
__device__ __forceinline__ void mbarrier_complete_tx(mbarrier_t* bar, unsigned bytes) {
  asm volatile("mbarrier.complete_tx.relaxed.cta.shared::cta.b64 [%0], %1;\n" ::"r"(
                   shared_address(bar)),
               "r"(bytes)
               : "memory");
}
__device__ __forceinline__ bool mbarrier_try_wait_parity(mbarrier_t* bar, unsigned parity) {
  unsigned done;
  asm volatile(
      "{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      " selp.u32 %0, 1, 0, p;\n}\n"
      : "=r"(done)
      : "r"(shared_address(bar)), "r"(parity)
      : "memory");
  return done != 0;
}
__device__ __forceinline__ void mbarrier_inval(mbarrier_t* bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];\n" ::"r"(shared_address(bar)) : "memory");
}
#endif

// Until the phase of `parity` completes.
template <class Barrier>
__device__ __forceinline__ void mbarrier_wait_parity(Barrier bar, unsigned parity) {
  while (!mbarrier_try_wait_parity(bar, parity)) {
  }
}

}  // namespace convjit_device
