// cp.async: copies from global to shared memory that run while the thread
// goes on (sm_80 and newer).  Copies join a group that cp_async_commit()
// closes; cp_async_wait<N>() waits until at most the N most recent
// committed groups are still in flight, cp_async_wait_all() for all.  The
// data is there for this thread after the wait, and for the others after
// the __syncthreads() that follows it.
//
// `src_bytes` below the copy size reads that many bytes and zero-fills the
// rest (0: reads nothing, e.g. a tile's padding).  Both addresses are
// aligned to the copy size.  In the emulator a copy lands at the wait that
// covers it: reading or writing its destination earlier is reported.
#pragma once
#include "common/warp.cuh"

namespace convjit_device {

#if defined(CONVJIT_EMULATOR)
// .ca (cached in L1) of 4, 8 or 16 bytes.
template <int Bytes, class Dst, class Src>
__device__ __forceinline__ void cp_async_ca(Dst dst, const Src* src, int src_bytes = Bytes) {
  cp_async<Bytes>("cp.async.ca.shared.global", dst, src, src_bytes);
}
// .cg (L2 only), 16 bytes.
template <class Dst, class Src>
__device__ __forceinline__ void cp_async_cg(Dst dst, const Src* src, int src_bytes = 16) {
  cp_async<16>("cp.async.cg.shared.global", dst, src, src_bytes);
}
__device__ __forceinline__ void cp_async_commit() { cp_async_commit_group(); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  cp_async_wait_group(N);
}
__device__ __forceinline__ void cp_async_wait_all() {
  cp_async_commit_group();
  cp_async_wait_group(0);
}
#else
template <int Bytes, class Dst, class Src>
__device__ __forceinline__ void cp_async_ca(Dst* dst, const Src* src, int src_bytes = Bytes) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async.ca copies 4, 8 or 16 bytes");
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(shared_address(dst)),
               "l"(src), "n"(Bytes), "r"(src_bytes)
               : "memory");
}
template <class Dst, class Src>
__device__ __forceinline__ void cp_async_cg(Dst* dst, const Src* src, int src_bytes = 16) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(shared_address(dst)),
               "l"(src), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.wait_all;\n" ::: "memory");
}
#endif

}  // namespace convjit_device
