// The contract every convjit kernel template is written to.  Self-contained: no
// header beyond what NVRTC provides, and only the SIMT model (threads,
// blocks, block-shared memory, barriers), so the host emulator
// (dispatcher/backends/emulator) compiles and runs the same code.
//
// Every kernel is declared CONVJIT_KERNEL with the signature
//   convjit_kernel(const storage_t* in0, const storage_t* in1, storage_t* out,
//                  float alpha, float beta, scratch_t* workspace)
// with (in0, in1, out) = conv fwd (x, w, y), bwddata (dy, w, dx), bwdfilt
// (x, dy, dw), pool fwd (x, -, y), pool bwd (x, dy, dx).  Templates with a
// second pass name it convjit_kernel_finish, with the same signature.  A
// conv fwd's entries take two more, its fused epilogue's operands
// (common/fused_epilogue.cuh):
//   ..., scratch_t* workspace, const storage_t* bias, const storage_t* residual)
// A kernel that copies with TMA takes those two, whether or not it reads
// them (its direction or epilogue may not), then its tensor maps
// (common/tensor_map.cuh):
//   ..., const storage_t* bias, const storage_t* residual,
//   const CONVJIT_GRID_CONSTANT tensor_maps_t maps)
// so that one launch serves a template's every direction and epilogue.
//
// The generated prelude defines, before including a template:
//   CONVJIT_DTYPE          0 f32, 1 f16, 2 bf16 (storage; math is f32)
//   struct Problem         the descriptor's shapes, strides and parameters
//                          as constexpr members (see kernel_source.cpp)
// Templates read Problem members into `const` locals, never `constexpr`
// ones: NVRTC folds them all the same, and the emulator, which binds them
// at run time, can compile the identical text.  For the same reason a
// branch on Problem that picks a template instantiation (a tile width, a
// pass a kernel may not need) is CONVJIT_IF_CONSTANT, not `if constexpr`.
//
// Storage is touched only through load() and store(), or copied as bits
// (storage_bits(), cp.async), scratch (f32 workspace) like a float; the
// workspace may hold storage elements too (workspace_storage()).  The
// emulator's storage type has no other operations, so a template that
// bypasses the dtype conversion does not compile there.
#pragma once

#ifndef CONVJIT_KERNEL
// extern "C": the JIT looks entries up by their plain names.
#define CONVJIT_KERNEL extern "C" __global__ void
#endif
#ifndef CONVJIT_KERNEL_BOUNDED
// A kernel declared for at most `threads` per block and at least
// `min_blocks` resident per SM: ptxas caps its registers to fit, which
// setmaxnreg (common/warpgroup.cuh) needs to move them between warpgroups.
#define CONVJIT_KERNEL_BOUNDED(threads, min_blocks) \
  extern "C" __global__ void __launch_bounds__(threads, min_blocks)
#endif
#ifndef CONVJIT_IF_CONSTANT
// `if constexpr` where NVRTC compiles the template: the side not taken is
// never instantiated, which spares NVRTC's front end and optimizer the
// code (a Hopper conv's other tile width, its split-K pass, its other
// first passes: a tenth of its time).  The emulator, whose Problem is
// bound at run time, defines it as a plain `if`.
#define CONVJIT_IF_CONSTANT if constexpr
#endif
#ifndef CONVJIT_SHARED_ARRAY
// 16-byte aligned, so that vector accesses, cp.async and ldmatrix can
// address it at 16-byte steps (the emulator assumes the same).
#define CONVJIT_SHARED_ARRAY(type, name, count) __shared__ alignas(16) type name[count]
#endif
#ifndef CONVJIT_DYNAMIC_SHARED_ARRAY
// The launch's dynamic shared memory (KernelEntry::dynamic_shared_bytes),
// one array per kernel, 1024-byte aligned for TMA's 128-byte swizzle.
// Beyond 48 KiB of it the JIT opts the kernel in when it loads, up to the
// device's limit (227 KiB on H100 and H200).
#define CONVJIT_DYNAMIC_SHARED_ARRAY(type, name) extern __shared__ __align__(1024) type name[]
#endif
#ifndef CONVJIT_SHARED_ARRAY_ALIGNED
// Aligned further, for a TMA box (128 bytes, or its swizzle's repeat).
#define CONVJIT_SHARED_ARRAY_ALIGNED(type, name, count, alignment) \
  __shared__ alignas(alignment) type name[count]
#endif

namespace convjit_device {

typedef long long index_t;

#if defined(CONVJIT_EMULATOR)
// Bounds-checked storage and scratch with load/store for CONVJIT_DTYPE,
// from dispatcher/backends/emulator/device_runtime.hpp (found by outer lookup).
typedef EmulatedStorage storage_t;
typedef EmulatedScratch scratch_t;
#elif CONVJIT_DTYPE == 0
typedef float scratch_t;
typedef float storage_t;
__device__ __forceinline__ float load(storage_t v) { return v; }
__device__ __forceinline__ storage_t store(float v) { return v; }
__device__ __forceinline__ unsigned storage_bits(storage_t v) { return __float_as_uint(v); }
__device__ __forceinline__ float value_of_bits(unsigned bits) { return __uint_as_float(bits); }
__device__ __forceinline__ unsigned bits_of_value(float v) { return __float_as_uint(v); }
#elif CONVJIT_DTYPE == 1 || CONVJIT_DTYPE == 2
typedef float scratch_t;
typedef unsigned short storage_t;  // IEEE binary16 or bfloat16 bits
__device__ __forceinline__ unsigned storage_bits(storage_t v) { return v; }
#endif
#if CONVJIT_DTYPE == 1 && !defined(CONVJIT_EMULATOR)
__device__ __forceinline__ float load(storage_t v) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(v));
  return f;
}
__device__ __forceinline__ storage_t store(float v) {
  storage_t h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
  return h;
}
#elif CONVJIT_DTYPE == 2 && !defined(CONVJIT_EMULATOR)
__device__ __forceinline__ float load(storage_t v) {
  return __int_as_float(static_cast<int>(static_cast<unsigned>(v) << 16));
}
__device__ __forceinline__ storage_t store(float v) {
  storage_t h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v));
  return h;
}
#endif
#if (CONVJIT_DTYPE == 1 || CONVJIT_DTYPE == 2) && !defined(CONVJIT_EMULATOR)
// An element's value from its bits (in the low 16), and a value's bits:
// for elements moved as whole vectors (common/vector_memory.cuh).
__device__ __forceinline__ float value_of_bits(unsigned bits) {
  return load(static_cast<storage_t>(bits));
}
__device__ __forceinline__ unsigned bits_of_value(float v) { return store(v); }
#endif
#if CONVJIT_DTYPE < 0 || CONVJIT_DTYPE > 2
#error "CONVJIT_DTYPE must be 0 (f32), 1 (f16) or 2 (bf16)"
#endif

// The workspace holding storage elements (a first pass's copy of an
// operand) instead of f32: it is untyped device memory, as cudaMalloc's
// is, and the emulator checks it in units of the storage element.
__device__ __forceinline__ storage_t* workspace_storage(scratch_t* workspace) {
  return reinterpret_cast<storage_t*>(workspace);
}

}  // namespace convjit_device
