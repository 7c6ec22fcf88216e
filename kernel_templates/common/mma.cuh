// Warp-level tensor-core multiply-accumulate, D = A * B + C with f32
// accumulators, every lane of the warp together (mma.sync.aligned).  With
// g = lane / 4 and q = lane % 4, the PTX ISA's fragment layouts are:
//   m16n8k16 f16/bf16  A 16x16: a[r] holds elements 2r, 2r+1 (low half
//                      first); element i is at row g + 8*((i/2)%2),
//                      column 2q + i%2 + 8*(i>=4).
//                      B 16x8: b[r] holds elements 2r, 2r+1; element i is
//                      at row 2q + i%2 + 8*(i>=2), column g.
//   m16n8k8 tf32       A 16x8: a[i] at row g + 8*(i%2), column q + 4*(i>=2).
//                      B 8x8: b[i] at row q + 4*i, column g.
//   both               C, D 16x8: c[i] at row g + 8*(i>=2), column 2q + i%2.
// tf32 operands are f32 rounded with to_tf32(): the tensor core reads only
// a register's top 19 bits.  d may be c.
#pragma once
#include "common/warp.cuh"

namespace convjit_device {

#if defined(CONVJIT_EMULATOR)
__device__ __forceinline__ void mma_m16n8k16_f16(float (&d)[4], const unsigned (&a)[4],
                                                 const unsigned (&b)[2], const float (&c)[4]) {
  mma("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
      &::convjit::emulator::complete_mma_m16n8k16_f16, d, a, b, c);
}
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const unsigned (&a)[4],
                                                  const unsigned (&b)[2], const float (&c)[4]) {
  mma("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
      &::convjit::emulator::complete_mma_m16n8k16_bf16, d, a, b, c);
}
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&d)[4], const unsigned (&a)[4],
                                                 const unsigned (&b)[2], const float (&c)[4]) {
  mma("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
      &::convjit::emulator::complete_mma_m16n8k8_tf32, d, a, b, c);
}
__device__ __forceinline__ unsigned to_tf32(float value) { return to_tf32_bits(value); }
#else
__device__ __forceinline__ void mma_m16n8k16_f16(float (&d)[4], const unsigned (&a)[4],
                                                 const unsigned (&b)[2], const float (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], const unsigned (&a)[4],
                                                  const unsigned (&b)[2], const float (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}
__device__ __forceinline__ void mma_m16n8k8_tf32(float (&d)[4], const unsigned (&a)[4],
                                                 const unsigned (&b)[2], const float (&c)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%10, %11, %12, %13};\n"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]), "f"(c[1]),
        "f"(c[2]), "f"(c[3]));
}
// cvt.rna.tf32.f32: round to nearest, ties away from zero.
__device__ __forceinline__ unsigned to_tf32(float value) {
  unsigned bits;
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(bits) : "f"(value));
  return bits;
}
#endif

}  // namespace convjit_device
