// Thread block clusters (sm_90; the PTX ISA's "Cluster of CTAs"): the
// blocks of a cluster run at once on neighbouring SMs and may reach each
// other's shared memory.  A kernel launched with a cluster dimension
// (KernelEntry::cluster_blocks) sees:
//   - cluster_rank(): its block's rank in the cluster (%cluster_ctarank),
//     and cluster_blocks() (%cluster_nctarank);
//   - cluster_sync(): barrier.cluster, arrive with release then wait with
//     acquire, by every thread of every block of the cluster.  After an
//     mbarrier's init, one cluster_sync() makes the barrier usable by the
//     other blocks (with fence_mbarrier_init() before it); before a block
//     returns, one keeps the others from reaching its shared memory after;
//   - cluster_map(p, rank): block `rank`'s copy of the shared element `p`
//     (mapa), a cluster_ptr that mbarrier_arrive_cluster() and the
//     multicast TMA loads take;
//   - load_cluster_64(p, rank): 8 bytes of block `rank`'s copy of the
//     shared element `p` (ld.shared::cluster), distributed shared memory.
// In the emulator the cluster's blocks run together, threads numbered
// across the cluster, and a remote access to a block that has returned, or
// to a barrier whose init no cluster_sync() published, is reported, as is
// a block that returns before another's read of its shared memory is
// ordered before it.
#pragma once
#include "common/vector_memory.cuh"
#include "common/warp.cuh"

namespace convjit_device {

#if defined(CONVJIT_EMULATOR)
__device__ __forceinline__ unsigned cluster_rank() {
  return ::convjit::emulated::cluster_ops::rank();
}
__device__ __forceinline__ unsigned cluster_blocks() {
  return ::convjit::emulated::cluster_ops::blocks();
}
__device__ __forceinline__ void cluster_sync() { ::convjit::emulated::cluster_ops::sync(); }
template <class Address>
__device__ __forceinline__ Address cluster_map(Address p, unsigned rank) {
  return ::convjit::emulated::cluster_ops::map(p, rank);
}
template <class Address>
__device__ __forceinline__ Vec64 load_cluster_64(Address p, unsigned rank) {
  Vec64 v;
  ::convjit::emulated::cluster_ops::load(cluster_map(p, rank), sizeof v, v.w);
  return v;
}
#else
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}
__device__ __forceinline__ unsigned cluster_blocks() {
  unsigned blocks;
  asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(blocks));
  return blocks;
}
__device__ __forceinline__ void cluster_sync() {
  asm volatile(
      "barrier.cluster.arrive.release.aligned;\n"
      "barrier.cluster.wait.acquire.aligned;\n" ::
          : "memory");
}

// A shared::cluster address: another block's shared memory, which only
// the instructions of that state space take.
template <class T>
struct cluster_ptr {
  unsigned address;
};
template <class T>
__device__ __forceinline__ cluster_ptr<T> cluster_map(T* p, unsigned rank) {
  cluster_ptr<T> mapped;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(mapped.address)
               : "r"(shared_address(p)), "r"(rank));
  return mapped;
}
template <class T>
__device__ __forceinline__ Vec64 load_cluster_64(T* p, unsigned rank) {
  Vec64 v;
  asm volatile("ld.shared::cluster.v2.b32 {%0, %1}, [%2];\n"
               : "=r"(v.w[0]), "=r"(v.w[1])
               : "r"(cluster_map(p, rank).address)
               : "memory");
  return v;
}
#endif

}  // namespace convjit_device
