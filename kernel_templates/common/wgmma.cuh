// wgmma (sm_90a): a warpgroup's (common/warpgroup.cuh) asynchronous
// matrix multiply-accumulate, D (64 x N, f32) = A (64 x K) B (K x N) [+ D],
// K = 16 for f16 and bf16, 8 for tf32 (PTX ISA, "Asynchronous Warpgroup
// Level Matrix Multiply-Accumulate").  B, and A unless it comes from
// registers, are read from shared memory through matrix descriptors:
//   wgmma_descriptor(p, leading_bytes, stride_bytes, swizzle)
// encodes the operand's address and its canonical layout's byte offsets
// (dispatcher/backends/emulator/wgmma_layout.hpp says what they mean).
// A thread's accumulators are a wgmma_accumulators<N>: N/2 floats, the
// mma.m16n8 accumulator layout repeated along N, warp w of the warpgroup
// holding rows 16w to 16w + 15.
//
// The order every warp of the warpgroup follows (each instruction is
// .sync.aligned: all its threads run it, with the same operands):
//   wgmma_fence();                       // before the first wgmma, and after
//                                        // any access to the accumulators
//   wgmma_ss<N, wgmma_bf16>(d, a, b, accumulate);   // any number of them
//   wgmma_commit_group();
//   wgmma_wait_group<0>(d);              // then d may be read
// Shared operands that threads wrote with ordinary stores need
// fence_proxy_async() (common/tma.cuh) in each writer, then a barrier;
// they may not be rewritten until the wait.  In the emulator each of these
// rules is checked, and the accumulators refuse reads before the wait.
//
// N is 8, 16, 32, 64, 128 or 256 (the emulator takes any multiple of 8 up
// to 256).  Transposed (MN-major) operands are for f16 and bf16 only.
#pragma once
#include "common/warpgroup.cuh"

namespace convjit_device {

// The operand types, by the value the instruction names.
struct wgmma_f16 {
  static constexpr int kType = 0;
};
struct wgmma_bf16 {
  static constexpr int kType = 1;
};
struct wgmma_tf32 {
  static constexpr int kType = 2;
};

// The descriptor's swizzle field (bits 62-63).
enum wgmma_swizzle_t {
  wgmma_swizzle_none = 0,
  wgmma_swizzle_128 = 1,
  wgmma_swizzle_64 = 2,
  wgmma_swizzle_32 = 3
};

// Bits 0-13: the address >> 4; 16-29: LBO >> 4; 32-45: SBO >> 4; 62-63:
// the swizzle (the base offset, bits 49-51, stays 0: swizzled operands
// start where the swizzle's pattern repeats).
__device__ __forceinline__ unsigned long long wgmma_descriptor_at(unsigned address,
                                                                  unsigned leading_bytes,
                                                                  unsigned stride_bytes,
                                                                  wgmma_swizzle_t swizzle) {
  return static_cast<unsigned long long>((address & 0x3ffffu) >> 4) |
         static_cast<unsigned long long>((leading_bytes & 0x3ffffu) >> 4) << 16 |
         static_cast<unsigned long long>((stride_bytes & 0x3ffffu) >> 4) << 32 |
         static_cast<unsigned long long>(swizzle) << 62;
}
template <class Shared>
__device__ __forceinline__ unsigned long long wgmma_descriptor(Shared p, unsigned leading_bytes,
                                                               unsigned stride_bytes,
                                                               wgmma_swizzle_t swizzle) {
  return wgmma_descriptor_at(shared_address(p), leading_bytes, stride_bytes, swizzle);
}

// Where accumulator i of this thread sits in its warpgroup's 64 x N
// result: warp w's rows 16w to 16w + 15, as mma.m16n8's accumulators, the
// 8-column blocks along N.  That is the thread's origin (accumulator 0)
// plus a step that depends on i alone: a loop unrolled over i takes the
// origin once and the steps as constants, where NVVM would otherwise
// simplify each element's place from the thread's index anew.
struct AccumulatorPlace {
  int row, col;
};
__device__ __forceinline__ AccumulatorPlace accumulator_origin() {
  const int warp = static_cast<int>(threadIdx.x / 32 % 4);
  const int lane = static_cast<int>(threadIdx.x % 32);
  return {16 * warp + lane / 4, 2 * (lane % 4)};
}
__device__ __forceinline__ AccumulatorPlace accumulator_step(int i) {
  return {8 * (i / 2 % 2), 8 * (i / 4) + i % 2};
}
__device__ __forceinline__ AccumulatorPlace accumulator_place(int i) {
  const AccumulatorPlace origin = accumulator_origin(), step = accumulator_step(i);
  return {origin.row + step.row, origin.col + step.col};
}

template <int N, class Type, int TransA, int TransB>
__device__ __forceinline__ void check_wgmma_shape() {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma's N is 8 to 256, a multiple of 8");
  static_assert(Type::kType != 2 || (TransA == 0 && TransB == 0),
                "tf32 operands are K-major: wgmma transposes f16 and bf16 only");
}

#if defined(CONVJIT_EMULATOR)
template <int N>
using wgmma_accumulators = ::convjit::emulated::WgmmaAccumulators<N>;

__device__ __forceinline__ void wgmma_fence() { ::convjit::emulated::wgmma_ops::fence(); }
__device__ __forceinline__ void wgmma_commit_group() { ::convjit::emulated::wgmma_ops::commit(); }
template <int Newest, int N>
__device__ __forceinline__ void wgmma_wait_group(wgmma_accumulators<N>& /*d*/) {
  ::convjit::emulated::wgmma_ops::wait(Newest);
}

// A and B from shared memory.
template <int N, class Type, int TransA = 0, int TransB = 0>
__device__ __forceinline__ void wgmma_ss(wgmma_accumulators<N>& d, unsigned long long a,
                                         unsigned long long b, bool accumulate) {
  check_wgmma_shape<N, Type, TransA, TransB>();
  ::convjit::emulated::wgmma_ops::mma(d, static_cast<::convjit::emulator::WgmmaType>(Type::kType),
                                      a, nullptr, b, TransA != 0, TransB != 0, accumulate);
}
// A from registers (K-major): 16-bit values two to a register, low half
// first, or tf32; see wgmma_layout.hpp's fragments.
template <int N, class Type, int TransB = 0>
__device__ __forceinline__ void wgmma_rs(wgmma_accumulators<N>& d, const unsigned (&a)[4],
                                         unsigned long long b, bool accumulate) {
  check_wgmma_shape<N, Type, 0, TransB>();
  ::convjit::emulated::wgmma_ops::mma(d, static_cast<::convjit::emulator::WgmmaType>(Type::kType),
                                      0, a, b, false, TransB != 0, accumulate);
}
#else
template <int N>
struct wgmma_accumulators {
  float v[N / 2];
  __device__ __forceinline__ float& operator[](int i) { return v[i]; }
};

// Keeps the compiler from moving accumulator accesses across the
// asynchronous instructions, which it cannot see use them: before each
// wgmma (which pins what came before it) and after each wait (what comes
// after).  Not after each wgmma too: a wgmma's fence after it and the
// next one's before it are the same fence twice, 64 empty asm statements
// for NVVM to carry each (up to a tenth of a Hopper conv's NVRTC time) for the
// same SASS.
template <int N>
__device__ __forceinline__ void wgmma_fence_operands(wgmma_accumulators<N>& d) {
#pragma unroll
  for (int i = 0; i < N / 2; ++i) asm volatile("" : "+f"(d.v[i])::"memory");
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit_group() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int Newest, int N>
__device__ __forceinline__ void wgmma_wait_group(wgmma_accumulators<N>& d) {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Newest) : "memory");
  wgmma_fence_operands(d);
}

// The instructions for each N.  Inline PTX takes its register lists
// spelled out: the accumulators (CONVJIT_WGMMA_D<N>, with their operands
// CONVJIT_WGMMA_ACC<N>), then the operands after them, numbered on from
// N/2.  CONVJIT_WGMMA_SHAPE defines wgmma_ss_n<N> and wgmma_rs_n<N> from
// those numbers.
#define CONVJIT_WGMMA_D8 \
  "{" \
  "%0, %1, %2, %3" \
  "}"
#define CONVJIT_WGMMA_D16 \
  "{" \
  "%0, %1, %2, %3, %4, %5, %6, %7" \
  "}"
#define CONVJIT_WGMMA_D32 \
  "{" \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15" \
  "}"
#define CONVJIT_WGMMA_D64 \
  "{" \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, " \
  "%30, %31" \
  "}"
#define CONVJIT_WGMMA_D128 \
  "{" \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, " \
  "%30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, " \
  "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, " \
  "%58, %59, %60, %61, %62, %63" \
  "}"
#define CONVJIT_WGMMA_D256 \
  "{" \
  "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, " \
  "%30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, " \
  "%44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, " \
  "%58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, " \
  "%72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, " \
  "%86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, " \
  "%100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, " \
  "%124, %125, %126, %127" \
  "}"
#define CONVJIT_WGMMA_ACC8(d) "+f"((d)[0]), "+f"((d)[1]), "+f"((d)[2]), "+f"((d)[3])
#define CONVJIT_WGMMA_ACC16(d) CONVJIT_WGMMA_ACC8(d), CONVJIT_WGMMA_ACC8((d) + 4)
#define CONVJIT_WGMMA_ACC32(d) CONVJIT_WGMMA_ACC16(d), CONVJIT_WGMMA_ACC16((d) + 8)
#define CONVJIT_WGMMA_ACC64(d) CONVJIT_WGMMA_ACC32(d), CONVJIT_WGMMA_ACC32((d) + 16)
#define CONVJIT_WGMMA_ACC128(d) CONVJIT_WGMMA_ACC64(d), CONVJIT_WGMMA_ACC64((d) + 32)
#define CONVJIT_WGMMA_ACC256(d) CONVJIT_WGMMA_ACC128(d), CONVJIT_WGMMA_ACC128((d) + 64)

// One wgmma: scale-d's predicate from operand SCALE, then the instruction
// on the accumulators DREGS and the operands after them.
#define CONVJIT_WGMMA_TEXT(INSTRUCTION, SCALE, DREGS, OPERANDS)                       \
  "{\n.reg .pred p;\nsetp.ne.b32 p, " SCALE ", 0;\nwgmma.mma_async.sync.aligned." \
  INSTRUCTION " " DREGS ", " OPERANDS ";\n}\n"

#define CONVJIT_WGMMA_SHAPE(N, SS_SCALE, SS_AB, SS_TRANS, RS_SCALE, RS_AB, RS_TRANS)          \
  template <class Type, int TransA, int TransB>                                            \
  __device__ __forceinline__ void wgmma_ss_n##N(float* d, unsigned long long a,            \
                                                unsigned long long b, int scale_d) {       \
    if constexpr (Type::kType == 0)                                                        \
      asm volatile(CONVJIT_WGMMA_TEXT("m64n" #N "k16.f32.f16.f16", SS_SCALE,               \
                                      CONVJIT_WGMMA_D##N, SS_AB ", p, 1, 1, " SS_TRANS)    \
                   : CONVJIT_WGMMA_ACC##N(d)                                               \
                   : "l"(a), "l"(b), "r"(scale_d), "n"(TransA), "n"(TransB));              \
    else if constexpr (Type::kType == 1)                                                   \
      asm volatile(CONVJIT_WGMMA_TEXT("m64n" #N "k16.f32.bf16.bf16", SS_SCALE,             \
                                      CONVJIT_WGMMA_D##N, SS_AB ", p, 1, 1, " SS_TRANS)    \
                   : CONVJIT_WGMMA_ACC##N(d)                                               \
                   : "l"(a), "l"(b), "r"(scale_d), "n"(TransA), "n"(TransB));              \
    else                                                                                   \
      asm volatile(CONVJIT_WGMMA_TEXT("m64n" #N "k8.f32.tf32.tf32", SS_SCALE,              \
                                      CONVJIT_WGMMA_D##N, SS_AB ", p, 1, 1")               \
                   : CONVJIT_WGMMA_ACC##N(d)                                               \
                   : "l"(a), "l"(b), "r"(scale_d));                                        \
  }                                                                                        \
  template <class Type, int TransB>                                                        \
  __device__ __forceinline__ void wgmma_rs_n##N(float* d, const unsigned* a,               \
                                                unsigned long long b, int scale_d) {       \
    if constexpr (Type::kType == 0)                                                        \
      asm volatile(CONVJIT_WGMMA_TEXT("m64n" #N "k16.f32.f16.f16", RS_SCALE,               \
                                      CONVJIT_WGMMA_D##N, RS_AB ", p, 1, 1, " RS_TRANS)    \
                   : CONVJIT_WGMMA_ACC##N(d)                                               \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d),     \
                     "n"(TransB));                                                         \
    else if constexpr (Type::kType == 1)                                                   \
      asm volatile(CONVJIT_WGMMA_TEXT("m64n" #N "k16.f32.bf16.bf16", RS_SCALE,             \
                                      CONVJIT_WGMMA_D##N, RS_AB ", p, 1, 1, " RS_TRANS)    \
                   : CONVJIT_WGMMA_ACC##N(d)                                               \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d),     \
                     "n"(TransB));                                                         \
    else                                                                                   \
      asm volatile(CONVJIT_WGMMA_TEXT("m64n" #N "k8.f32.tf32.tf32", RS_SCALE,              \
                                      CONVJIT_WGMMA_D##N, RS_AB ", p, 1, 1")               \
                   : CONVJIT_WGMMA_ACC##N(d)                                               \
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));    \
  }

CONVJIT_WGMMA_SHAPE(8, "%6", "%4, %5", "%7, %8", "%9", "{%4, %5, %6, %7}, %8", "%10")
CONVJIT_WGMMA_SHAPE(16, "%10", "%8, %9", "%11, %12", "%13", "{%8, %9, %10, %11}, %12", "%14")
CONVJIT_WGMMA_SHAPE(32, "%18", "%16, %17", "%19, %20", "%21", "{%16, %17, %18, %19}, %20", "%22")
CONVJIT_WGMMA_SHAPE(64, "%34", "%32, %33", "%35, %36", "%37", "{%32, %33, %34, %35}, %36", "%38")
CONVJIT_WGMMA_SHAPE(128, "%66", "%64, %65", "%67, %68", "%69", "{%64, %65, %66, %67}, %68", "%70")
CONVJIT_WGMMA_SHAPE(256, "%130", "%128, %129", "%131, %132", "%133",
                    "{%128, %129, %130, %131}, %132", "%134")

template <int N, class Type, int TransA = 0, int TransB = 0>
__device__ __forceinline__ void wgmma_ss(wgmma_accumulators<N>& d, unsigned long long a,
                                         unsigned long long b, bool accumulate) {
  check_wgmma_shape<N, Type, TransA, TransB>();
  static_assert(N == 8 || N == 16 || N == 32 || N == 64 || N == 128 || N == 256,
                "the GPU wrappers take N = 8, 16, 32, 64, 128 or 256");
  wgmma_fence_operands(d);
  const int scale_d = accumulate ? 1 : 0;
  if constexpr (N == 8) wgmma_ss_n8<Type, TransA, TransB>(d.v, a, b, scale_d);
  else if constexpr (N == 16) wgmma_ss_n16<Type, TransA, TransB>(d.v, a, b, scale_d);
  else if constexpr (N == 32) wgmma_ss_n32<Type, TransA, TransB>(d.v, a, b, scale_d);
  else if constexpr (N == 64) wgmma_ss_n64<Type, TransA, TransB>(d.v, a, b, scale_d);
  else if constexpr (N == 128) wgmma_ss_n128<Type, TransA, TransB>(d.v, a, b, scale_d);
  else
    wgmma_ss_n256<Type, TransA, TransB>(d.v, a, b, scale_d);
}

template <int N, class Type, int TransB = 0>
__device__ __forceinline__ void wgmma_rs(wgmma_accumulators<N>& d, const unsigned (&a)[4],
                                         unsigned long long b, bool accumulate) {
  check_wgmma_shape<N, Type, 0, TransB>();
  static_assert(N == 8 || N == 16 || N == 32 || N == 64 || N == 128 || N == 256,
                "the GPU wrappers take N = 8, 16, 32, 64, 128 or 256");
  wgmma_fence_operands(d);
  const int scale_d = accumulate ? 1 : 0;
  if constexpr (N == 8) wgmma_rs_n8<Type, TransB>(d.v, a, b, scale_d);
  else if constexpr (N == 16) wgmma_rs_n16<Type, TransB>(d.v, a, b, scale_d);
  else if constexpr (N == 32) wgmma_rs_n32<Type, TransB>(d.v, a, b, scale_d);
  else if constexpr (N == 64) wgmma_rs_n64<Type, TransB>(d.v, a, b, scale_d);
  else if constexpr (N == 128) wgmma_rs_n128<Type, TransB>(d.v, a, b, scale_d);
  else
    wgmma_rs_n256<Type, TransB>(d.v, a, b, scale_d);
}
#endif

}  // namespace convjit_device
