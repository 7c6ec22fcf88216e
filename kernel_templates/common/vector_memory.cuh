// 64- and 128-bit loads and stores of global or shared memory: one
// instruction moves 8 or 16 bytes of whole elements.  The address must be
// aligned to the access size: the GPU faults otherwise, and the emulator
// reports it.  `p` is a storage_t or scratch_t pointer into global memory,
// or the address of a shared-array element.
#pragma once
#include "common/kernel_abi.cuh"

namespace convjit_device {

struct alignas(8) Vec64 {
  unsigned w[2];
};
struct alignas(16) Vec128 {
  unsigned w[4];
};

#if defined(CONVJIT_EMULATOR)
template <class P>
__device__ __forceinline__ Vec64 load_64(P p) {
  Vec64 v;
  vector_load(p, sizeof v, v.w);
  return v;
}
template <class P>
__device__ __forceinline__ Vec128 load_128(P p) {
  Vec128 v;
  vector_load(p, sizeof v, v.w);
  return v;
}
template <class P>
__device__ __forceinline__ void store_64(P p, const Vec64& v) {
  vector_store(p, sizeof v, v.w);
}
template <class P>
__device__ __forceinline__ void store_128(P p, const Vec128& v) {
  vector_store(p, sizeof v, v.w);
}
#else
// Generic addressing: one ld.v2/ld.v4 (st) serves global and shared alike.
template <class T>
__device__ __forceinline__ Vec64 load_64(const T* p) {
  return *reinterpret_cast<const Vec64*>(p);
}
template <class T>
__device__ __forceinline__ Vec128 load_128(const T* p) {
  return *reinterpret_cast<const Vec128*>(p);
}
template <class T>
__device__ __forceinline__ void store_64(T* p, const Vec64& v) {
  *reinterpret_cast<Vec64*>(p) = v;
}
template <class T>
__device__ __forceinline__ void store_128(T* p, const Vec128& v) {
  *reinterpret_cast<Vec128*>(p) = v;
}
#endif

}  // namespace convjit_device
