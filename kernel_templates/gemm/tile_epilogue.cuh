// Writes a block's accumulators through an element writer, by default
// out = alpha * acc + beta * out (a conv fwd's fused epilogue is another).  The
// tile passes through shared memory (the pipeline's, now free) in slabs
// of rows, so that the global stores run along the output's contiguous
// dimension whichever it is: GEMM columns (channels-last outputs) or rows
// (pixels, channels-first).  An Output says where element (m, n) lives,
// `offset(m, n)`, or -1 past the ends, and which runs along memory,
// `columns_contiguous`.  The writer is called as write(m, n, offset, acc).
#pragma once
#include "common/epilogue.cuh"
#include "gemm/tile_shape.cuh"

namespace convjit_device {

template <class Math, class Output, class Shared, class Write>
__device__ __forceinline__ void store_tile(Shared& smem, const Math& math, const Output& out,
                                           index_t m0, index_t n0, const Write& write) {
  typedef typename Math::Tile Tile;
  // Odd, so that a column of the slab spans every bank (channels-first
  // reads); 11 past a multiple of 32, so that an mma fragment's stores (a
  // lane at row lane / 4, column 2 (lane % 4)) fall at most two to a bank,
  // the least any odd pitch gives (BN + 1 gives four).
  constexpr int kPitch = (Tile::BN + 31) / 32 * 32 + 11;
  constexpr int kFit = Tile::kSharedWords / kPitch / 16 * 16;
  constexpr int kSlab = kFit < Tile::BM ? kFit : Tile::BM;
  const int warp_m = static_cast<int>(warp_id()) % Tile::WARPS_M;
  const int warp_n = static_cast<int>(warp_id()) / Tile::WARPS_M;
  for (int first = 0; first < Tile::BM; first += kSlab) {
    math.for_each(warp_m, warp_n, [&](int r, int c, float v) {
      if (r >= first && r < first + kSlab) smem[(r - first) * kPitch + c] = __float_as_uint(v);
    });
    __syncthreads();
    for (int e = static_cast<int>(threadIdx.x); e < kSlab * Tile::BN; e += Tile::kThreads) {
      const int r = out.columns_contiguous ? e / Tile::BN : e % kSlab;
      const int c = out.columns_contiguous ? e % Tile::BN : e / kSlab;
      if (first + r >= Tile::BM) continue;
      const index_t at = out.offset(m0 + first + r, n0 + c);
      if (at >= 0) write(m0 + first + r, n0 + c, at, __uint_as_float(smem[r * kPitch + c]));
    }
    __syncthreads();
  }
}

// out = alpha * acc + beta * out.
template <class Math, class Output, class Shared>
__device__ __forceinline__ void store_tile(Shared& smem, const Math& math, const Output& out,
                                           index_t m0, index_t n0, float alpha, float beta) {
  store_tile(smem, math, out, m0, n0, [&](index_t, index_t, index_t at, float v) {
    scale_store(out.base + at, v, alpha, beta);
  });
}

}  // namespace convjit_device
