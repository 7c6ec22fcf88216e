// ldmatrix.sync.aligned.m8n8.{x1,x2,x4}[.trans].shared.b16: the warp
// loads one, two or four 8x8 matrices of 16-bit elements from shared
// memory.  Lanes 8i..8i+7 give the addresses of matrix i's rows (16
// bytes each, 16-byte aligned); lane l receives, in register i, row l/4,
// columns 2(l%4) and 2(l%4)+1 of matrix i (low half first), or with
// .trans the same of the transposed matrix.  That is an mma.sync
// fragment's layout.  Every lane of the warp must call it together.
#pragma once
#include "common/warp.cuh"

namespace convjit_device {

#if defined(CONVJIT_EMULATOR)
template <class P>
__device__ __forceinline__ void ldmatrix_x1(unsigned (&r)[1], P row) {
  ldmatrix(r, 1, false, row);
}
template <class P>
__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[2], P row) {
  ldmatrix(r, 2, false, row);
}
template <class P>
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], P row) {
  ldmatrix(r, 4, false, row);
}
template <class P>
__device__ __forceinline__ void ldmatrix_x1_trans(unsigned (&r)[1], P row) {
  ldmatrix(r, 1, true, row);
}
template <class P>
__device__ __forceinline__ void ldmatrix_x2_trans(unsigned (&r)[2], P row) {
  ldmatrix(r, 2, true, row);
}
template <class P>
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], P row) {
  ldmatrix(r, 4, true, row);
}
#else
template <class T>
__device__ __forceinline__ void ldmatrix_x1(unsigned (&r)[1], const T* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
               : "=r"(r[0])
               : "r"(shared_address(row)));
}
template <class T>
__device__ __forceinline__ void ldmatrix_x2(unsigned (&r)[2], const T* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(shared_address(row)));
}
template <class T>
__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], const T* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}
template <class T>
__device__ __forceinline__ void ldmatrix_x1_trans(unsigned (&r)[1], const T* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
               : "=r"(r[0])
               : "r"(shared_address(row)));
}
template <class T>
__device__ __forceinline__ void ldmatrix_x2_trans(unsigned (&r)[2], const T* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(shared_address(row)));
}
template <class T>
__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], const T* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(shared_address(row)));
}
#endif

}  // namespace convjit_device
