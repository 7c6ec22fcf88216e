// 64- and 128-bit loads and stores of global or shared memory: one
// instruction moves 8 or 16 bytes of whole elements.  The address must be
// aligned to the access size: the GPU faults otherwise, and the emulator
// reports it.  `p` is a storage_t or scratch_t pointer into global memory,
// or the address of a shared-array element.
#pragma once
#include "common/kernel_abi.cuh"
#include "common/warp.cuh"

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

// 16 bytes of global memory that another block wrote in this kernel, read
// from the L2 (ld.global.cg), past this SM's L1, which is not coherent
// with other SMs' writes.
template <class T>
__device__ __forceinline__ Vec128 load_128_l2(const T* p) {
#if defined(CONVJIT_EMULATOR)
  return load_128(p);
#else
  Vec128 v;
  asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.w[0]), "=r"(v.w[1]), "=r"(v.w[2]), "=r"(v.w[3])
               : "l"(p)
               : "memory");
  return v;
#endif
}

// store_64 to element `index` of a shared array, issued as PTX's
// st.shared.v2.b32 itself: the same STS.64, but NVVM does not analyse it
// as a store.  As plain stores, the 64 to 128 with which a wgmma tile's
// accumulators go to shared memory (conv/wgmma_conv_tile.cuh) took NVVM
// and ptxas a fifth of the kernel's NVRTC time.  The address is the
// array's plus a 32-bit offset, which ptxas folds into the store's
// immediate where the index is a constant away from another's.  The
// memory clobber keeps it in order with the loads and barriers around it.
template <class P>
__device__ __forceinline__ void store_shared_64(P array, int index, const Vec64& v) {
#if defined(CONVJIT_EMULATOR)
  store_64(&array[index], v);
#else
  const unsigned address =
      shared_address(array) + static_cast<unsigned>(index) * static_cast<unsigned>(sizeof *array);
  asm volatile("st.shared.v2.b32 [%0], {%1, %2};\n" ::"r"(address), "r"(v.w[0]), "r"(v.w[1])
               : "memory");
#endif
}

// One 32-bit word to element `index` of a shared array, as st.shared.b32
// for store_shared_64's reason: the 64 to 128 words a wgmma tile's
// accumulators take as 16-bit pairs for a TMA store.
template <class P>
__device__ __forceinline__ void store_shared_32(P array, int index, unsigned v) {
#if defined(CONVJIT_EMULATOR)
  vector_store(&array[index], sizeof v, &v);
#else
  const unsigned address =
      shared_address(array) + static_cast<unsigned>(index) * static_cast<unsigned>(sizeof *array);
  asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(address), "r"(v) : "memory");
#endif
}

// store_64 to global memory as PTX's st.global.v2.b32, for the same
// reason: the partial sums a wgmma tile writes for split-K (32 to 64 a
// thread) took NVVM a sixth of a bwdfilt kernel's NVRTC time as plain
// stores.  `p` is a generic pointer into global memory, which on the GPU
// is the global address itself.
template <class P>
__device__ __forceinline__ void store_global_64(P p, const Vec64& v) {
#if defined(CONVJIT_EMULATOR)
  store_64(p, v);
#else
  asm volatile("st.global.v2.b32 [%0], {%1, %2};\n" ::"l"(p), "r"(v.w[0]), "r"(v.w[1]) : "memory");
#endif
}

// An offset kept in two 32-bit words of a shared array (`p` 8-byte
// aligned), for an epilogue that computes each row's offset once and reads
// it from many threads: the templates' shared arrays are of 32-bit words.
template <class P>
__device__ __forceinline__ void store_offset(P p, index_t offset) {
  const auto bits = static_cast<unsigned long long>(offset);
  store_64(p, Vec64{{static_cast<unsigned>(bits), static_cast<unsigned>(bits >> 32)}});
}
template <class P>
__device__ __forceinline__ index_t load_offset(P p) {
  const Vec64 v = load_64(p);
  return static_cast<index_t>(static_cast<unsigned long long>(v.w[1]) << 32 | v.w[0]);
}

// Elements per 16-byte chunk: 8 of 16 bits, 4 of f32.
constexpr int kChunkElements = 16 / static_cast<int>(sizeof(storage_t));

// The pointer's share of a promise that chunks of a tensor load as one
// 16-byte access: 16-byte alignment.
template <class T>
__device__ __forceinline__ bool chunk_aligned(const T* base) {
  return reinterpret_cast<unsigned long long>(base) % 16 == 0;
}

// The strides' share, for chunks that run along a dimension of `run`
// elements and stride `unit`: that dimension is contiguous and whole
// chunks fit in it, and every other stride (`others`) keeps a chunk's
// start on a chunk boundary.
template <class... Strides>
__device__ __forceinline__ bool chunked(index_t run, index_t unit, Strides... others) {
  const index_t e = kChunkElements;
  return unit == 1 && run % e == 0 && ((others % e == 0) && ...);
}

// A chunk's values in f32.
__device__ __forceinline__ void unpack_chunk(const Vec128& q, float (&v)[kChunkElements]) {
#pragma unroll
  for (int j = 0; j < kChunkElements; ++j)
    v[j] = kChunkElements == 4 ? value_of_bits(q.w[j])
                               : value_of_bits(q.w[j / 2] >> (16 * (j % 2)) & 0xffffu);
}
// A chunk of its elements' bits (each in its word's low bits), and a
// chunk of values, in f32.
__device__ __forceinline__ Vec128 chunk_of_bits(const unsigned (&bits)[kChunkElements]) {
  Vec128 q{};
#pragma unroll
  for (int j = 0; j < kChunkElements; ++j) {
    if (kChunkElements == 4)
      q.w[j] = bits[j];
    else
      q.w[j / 2] |= bits[j] << (16 * (j % 2));
  }
  return q;
}
__device__ __forceinline__ Vec128 pack_chunk(const float (&v)[kChunkElements]) {
  unsigned bits[kChunkElements];
#pragma unroll
  for (int j = 0; j < kChunkElements; ++j) bits[j] = bits_of_value(v[j]);
  return chunk_of_bits(bits);
}

}  // namespace convjit_device
