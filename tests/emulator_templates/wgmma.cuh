// Test-only template (f32 input holding 16-bit patterns or tf32 values):
// the wgmma wrappers (common/wgmma.cuh).  Each warpgroup g of the block
// computes D (64 x N) = A_g (64 x K) B^T, B (N x K) shared by both: the
// threads lay the operands out in shared memory as each mode's descriptors
// say, fence the async proxy, and each warpgroup runs its wgmmas (one per
// 16, or 8 for tf32, of K), commits, waits, and writes D row-major to
// out[64 N g + ...] through the accumulator layout.  support/wgmma_cases.hpp
// has the shapes and the results.  Modes:
//   0 f16, N 16, A and B K-major unswizzled (core matrices);
//   1 bf16, N 64, K 64 in four wgmmas, both 128-byte swizzled;
//   2 f16, N 64, A 64-byte swizzled, B MN-major 128-byte swizzled;
//   3 tf32, N 8, both 32-byte swizzled;
//   4 f16, N 256, A from registers, B 32-byte swizzled;
//   5 f16, N 32, A MN-major unswizzled, B 128-byte swizzled;
//   13 bf16, N 128, K 32 in two wgmmas, A and B MN-major 128-byte
//      swizzled: B's N in two spans (the leading offset), K in 8-row
//      groups (the stride offset), as the bwdfilt conv reads its boxes;
//   14 mode 1 with A's rows 3 lines (of 128 bytes) past its region's
//      1024-byte aligned start, swizzled by their absolute place as TMA
//      writes them, and its descriptor starting at the first row (base
//      offset 0): the question a halo A tile (its taps' shifted rows)
//      puts, whether wgmma swizzles by the address too.
// Planted bugs on mode 0: 6 no wgmma.fence; 7 an accumulator read before
// the wait; 8 B rewritten while the wgmma reads it; 9 no fence.proxy.async
// after the operands' stores; 10 warp 1 gives another B; 11 a stride
// offset beyond shared memory; 12 an accumulator written after the fence.
#include "common/grid.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"

namespace convjit_device {

struct WgmmaTestLayout {
  bool mn_major;
  unsigned span;  // swizzle bytes; 0: unswizzled
  unsigned lbo, sbo;
};

struct WgmmaTestMode {
  WgmmaTestLayout a, b;
};

__device__ __forceinline__ WgmmaTestMode wgmma_test_mode(int mode) {
  switch (mode) {
    case 1:
    case 14:
      return {{false, 128, 16, 1024}, {false, 128, 16, 1024}};
    case 2:
      return {{false, 64, 16, 512}, {true, 128, 8192, 1024}};
    case 3:
      return {{false, 32, 16, 256}, {false, 32, 16, 256}};
    case 4:
      return {{false, 0, 128, 256}, {false, 32, 16, 256}};
    case 5:
      return {{true, 0, 1024, 128}, {false, 128, 16, 1024}};
    case 13:
      return {{true, 128, 8192, 1024}, {true, 128, 4096, 1024}};
    default:
      return {{false, 0, 128, 256}, {false, 0, 128, 256}};
  }
}

// Element (row, k)'s byte offset in a canonical layout (the PTX ISA's
// "Shared Memory Matrix Layout"), from a base aligned to the swizzle's repeat.
__device__ __forceinline__ unsigned wgmma_test_offset(const WgmmaTestLayout& l, unsigned bytes,
                                                      unsigned row, unsigned k) {
  unsigned a;
  if (!l.mn_major) {
    const unsigned kb = k * bytes;
    if (l.span == 0) return row % 8 * 16 + row / 8 * l.sbo + kb / 16 * l.lbo + kb % 16;
    a = row % 8 * l.span + row / 8 * l.sbo + kb;
  } else {
    const unsigned per = 16 / bytes;
    if (l.span == 0) return row % per * bytes + row / per * l.sbo + k % 8 * 16 + k / 8 * l.lbo;
    const unsigned w = l.span / 16;
    a = row % per * bytes + row / per % w * 16 + row / (per * w) * l.lbo + k % 8 * l.span +
        k / 8 * l.sbo;
  }
  return a ^ (((a >> 7) & (l.span / 16 - 1)) << 4);
}

__device__ __forceinline__ wgmma_swizzle_t wgmma_test_swizzle(unsigned span) {
  return span == 128  ? wgmma_swizzle_128
         : span == 64 ? wgmma_swizzle_64
         : span == 32 ? wgmma_swizzle_32
                      : wgmma_swizzle_none;
}

// Mode 14's shift of A's rows, in 128-byte lines, and the bytes between
// the warpgroups' A (1024-aligned, the shifted rows within).
constexpr unsigned kShiftedLines = 3;
__device__ __forceinline__ unsigned wgmma_test_a_shift(int mode) {
  return mode == 14 ? kShiftedLines * 128 : 0;
}
__device__ __forceinline__ unsigned wgmma_test_a_region(int mode) {
  return mode == 14 ? 9216 : 8192;
}

// Where k-slice j (16 elements of K) starts: 32 bytes on within a
// swizzled K-major row; two core matrices (2 LBO) on unswizzled; two
// 8-row groups (2 SBO) on a swizzled MN-major layout.
__device__ __forceinline__ unsigned wgmma_test_slice(const WgmmaTestLayout& l, int j) {
  if (l.mn_major && l.span != 0) return 2 * l.sbo * j;
  return l.mn_major || l.span == 0 ? 2 * l.lbo * j : 32 * j;
}

template <int N, class Type, int TransA, int TransB, bool ARegisters, class A16, class A32,
          class B16, class B32>
__device__ __forceinline__ void wgmma_test_run(int mode, int k_total, A16 a16, A32 a32, B16 b16,
                                               B32 b32, const storage_t* in0, storage_t* out) {
  const WgmmaTestMode m = wgmma_test_mode(mode);
  const bool tf32 = Type::kType == 2;
  const unsigned g = warpgroup_id(), w = warp_id() % 4, lane = lane_id();
  wgmma_accumulators<N> d;
  if (mode != 6) wgmma_fence();
  if (mode == 12) d[0] = 0.0f;
  const int step = tf32 ? 8 : 16;
  for (int j = 0; j < k_total / step; ++j) {
    const unsigned a_at =
        tf32 ? g * 1024u : (g * wgmma_test_a_region(mode) + wgmma_test_a_shift(mode)) / 2;
    unsigned long long a =
        tf32 ? wgmma_descriptor(&a32[a_at], m.a.lbo, m.a.sbo, wgmma_test_swizzle(m.a.span))
             : wgmma_descriptor(&a16[a_at], m.a.lbo, m.a.sbo, wgmma_test_swizzle(m.a.span));
    unsigned long long b = tf32 ? wgmma_descriptor(&b32[0], m.b.lbo, mode == 11 ? 65536u : m.b.sbo,
                                                   wgmma_test_swizzle(m.b.span))
                                : wgmma_descriptor(&b16[0], m.b.lbo, mode == 11 ? 65536u : m.b.sbo,
                                                   wgmma_test_swizzle(m.b.span));
    a += wgmma_test_slice(m.a, j) >> 4;
    b += wgmma_test_slice(m.b, j) >> 4;
    if (mode == 10 && w == 1) b += 2;
    if (ARegisters) {
      unsigned regs[4] = {0, 0, 0, 0};
      for (int i = 0; i < 8; ++i) {
        const unsigned row = 16 * w + lane / 4 + 8 * ((i / 2) % 2);
        const unsigned col = 2 * (lane % 4) + i % 2 + 8 * (i / 4);
        const index_t at = (64 * g + row) * k_total + col + step * j;
        regs[i / 2] |= static_cast<unsigned>(load(in0[at])) << (16 * (i % 2));
      }
      wgmma_rs<N, Type, TransB>(d, regs, b, j > 0);
    } else {
      wgmma_ss<N, Type, TransA, TransB>(d, a, b, j > 0);
    }
  }
  if (mode == 8 && threadIdx.x == 0) b16[0] = static_cast<unsigned short>(0);
  wgmma_commit_group();
  float early = 0.0f;
  if (mode == 7) early = d[0];
  wgmma_wait_group<0>(d);
  for (int i = 0; i < N / 2; ++i) {
    const unsigned row = 16 * w + lane / 4 + 8 * ((i / 2) % 2);
    const unsigned col = 8 * (i / 4) + 2 * (lane % 4) + i % 2;
    out[(64 * g + row) * N + col] = store(d[i] + early);
  }
}

}  // namespace convjit_device

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* in0,
                              const convjit_device::storage_t* /*in1*/,
                              convjit_device::storage_t* out, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  CONVJIT_SHARED_ARRAY_ALIGNED(unsigned short, a16, 9216, 1024);
  CONVJIT_SHARED_ARRAY_ALIGNED(unsigned short, b16, 4096, 1024);
  CONVJIT_SHARED_ARRAY_ALIGNED(unsigned, a32, 2048, 1024);
  CONVJIT_SHARED_ARRAY_ALIGNED(unsigned, b32, 64, 1024);
  const int mode = static_cast<int>(P::MODE);
  const WgmmaTestMode m = wgmma_test_mode(mode);
  const int n = mode == 1 || mode == 2 || mode == 14 ? 64
                : mode == 3                          ? 8
                : mode == 4                          ? 256
                : mode == 5                          ? 32
                : mode == 13                         ? 128
                                                     : 16;
  const int k_total = mode == 1 || mode == 14 ? 64 : mode == 3 ? 8 : mode == 13 ? 32 : 16;
  const bool tf32 = mode == 3, a_registers = mode == 4;
  const unsigned bytes = tf32 ? 4 : 2, t = threadIdx.x;
  // The operands, each element where its layout puts it.
  const int a_elements = 2 * 64 * k_total, b_elements = n * k_total;
  for (int i = static_cast<int>(t); i < a_elements && !a_registers; i += 256) {
    const unsigned g = i / (64 * k_total), row = i / k_total % 64, k = i % k_total;
    const unsigned shift = wgmma_test_a_shift(mode);  // rows shifted, swizzled where they land
    const unsigned at = g * (tf32 ? 4096 : wgmma_test_a_region(mode)) +
                        (shift == 0 ? wgmma_test_offset(m.a, bytes, row, k)
                                    : wgmma_test_offset(m.a, bytes, row + shift / 128, k));
    const float v = load(in0[i]);
    if (tf32)
      a32[at / 4] = __float_as_uint(v);
    else
      a16[at / 2] = static_cast<unsigned short>(v);
  }
  for (int i = static_cast<int>(t); i < b_elements; i += 256) {
    const unsigned row = i / k_total, k = i % k_total;
    const unsigned at = wgmma_test_offset(m.b, bytes, row, k);
    const float v = load(in0[a_elements + i]);
    if (tf32)
      b32[at / 4] = __float_as_uint(v);
    else
      b16[at / 2] = static_cast<unsigned short>(v);
  }
  if (mode != 9) fence_proxy_async();
  __syncthreads();
  if (mode == 1 || mode == 14)
    wgmma_test_run<64, wgmma_bf16, 0, 0, false>(mode, k_total, &a16[0], &a32[0], &b16[0], &b32[0],
                                                in0, out);
  else if (mode == 2)
    wgmma_test_run<64, wgmma_f16, 0, 1, false>(mode, k_total, &a16[0], &a32[0], &b16[0], &b32[0],
                                               in0, out);
  else if (mode == 3)
    wgmma_test_run<8, wgmma_tf32, 0, 0, false>(mode, k_total, &a16[0], &a32[0], &b16[0], &b32[0],
                                               in0, out);
  else if (mode == 4)
    wgmma_test_run<256, wgmma_f16, 0, 0, true>(mode, k_total, &a16[0], &a32[0], &b16[0], &b32[0],
                                               in0, out);
  else if (mode == 5)
    wgmma_test_run<32, wgmma_f16, 1, 0, false>(mode, k_total, &a16[0], &a32[0], &b16[0], &b32[0],
                                               in0, out);
  else if (mode == 13)
    wgmma_test_run<128, wgmma_bf16, 1, 1, false>(mode, k_total, &a16[0], &a32[0], &b16[0],
                                                 &b32[0], in0, out);
  else
    wgmma_test_run<16, wgmma_f16, 0, 0, false>(mode, k_total, &a16[0], &a32[0], &b16[0], &b32[0],
                                               in0, out);
}
