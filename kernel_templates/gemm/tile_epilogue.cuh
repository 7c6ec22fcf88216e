// Writes a block's accumulators through an element writer, by default
// out = alpha * acc + beta * out (a conv fwd's fused epilogue is another).  The
// tile passes through shared memory (the pipeline's, now free) in slabs
// of rows, so that the global stores run along the output's contiguous
// dimension whichever it is: GEMM columns (channels-last outputs) or rows
// (pixels, channels-first).  An Output says where element (m, n) lives
// as the sum of a row's and a column's offsets, each -1 past the ends,
// and which runs along memory:
//   struct Output {
//     index_t row(index_t m) const;     // GEMM row m's share of the offset
//     index_t column(index_t n) const;  // GEMM column n's
//     bool columns_contiguous;
//   };
// The writer is called as write(m, n, offset, acc).
#pragma once
#include "common/epilogue.cuh"
#include "common/vector_memory.cuh"
#include "gemm/tile_shape.cuh"

namespace convjit_device {

// NVRTC compiles C++17, without <bit>'s std::bit_floor.
__host__ __device__ constexpr int power_of_two_at_most(int n) {
  int p = 1;
  while (2 * p <= n) p *= 2;
  return p;
}

// Where the epilogue keeps a slab, its rows' offsets and the tile's
// columns' offsets, in words of the pipeline's shared memory.
template <class Tile>
struct EpilogueLayout {
  // Odd, so that a column of the slab spans every bank (channels-first
  // reads); 11 past a multiple of 32, so that an mma fragment's stores (a
  // lane at row lane / 4, column 2 (lane % 4)) fall at most two to a bank,
  // the least any odd pitch gives (BN + 1 gives four).
  static constexpr int kPitch = (Tile::BN + 31) / 32 * 32 + 11;
  // A slab row takes kPitch words and its offset two more; the columns'
  // offsets two words each.
  static constexpr int kFit = (Tile::kSharedWords - 2 * Tile::BN) / (kPitch + 2);
  // A power of two, as BN is: an element's row and column in the slab are
  // then shifts and masks of its index, and a thread's column (channels
  // last) or row (channels first) the same at every step of the 256
  // threads.  No tile takes more slabs for it (BM = 128: a fit of 80 or
  // 112 rows took two slabs, as 64 does).
  static constexpr int kSlab = power_of_two_at_most(kFit < Tile::BM ? kFit : Tile::BM);
  // Where the rows' and the columns' offsets start (even: 8-byte aligned).
  static constexpr int kRowOffsets = kSlab * kPitch;
  static constexpr int kColumnOffsets = kRowOffsets + 2 * kSlab;
  static_assert(kSlab >= 16 && kColumnOffsets + 2 * Tile::BN <= Tile::kSharedWords,
                "the epilogue's slab and offsets fit in the pipeline's shared memory");
  static_assert(Tile::BM % kSlab == 0, "the slabs cover the tile's rows exactly");
};

// Each row's and column's offset is computed once, by one thread, and
// read from shared memory by the threads that store its elements: a
// pixel's offset divides by the output's extents in 64 bits, some 60
// instructions that would otherwise run for every element.
template <class Math, class Output, class Shared, class Write>
__device__ __forceinline__ void store_tile(Shared& smem, const Math& math, const Output& out,
                                           index_t m0, index_t n0, const Write& write) {
  typedef typename Math::Tile Tile;
  typedef EpilogueLayout<Tile> L;
  const int t = static_cast<int>(threadIdx.x);
  const int warp_m = static_cast<int>(warp_id()) % Tile::WARPS_M;
  const int warp_n = static_cast<int>(warp_id()) / Tile::WARPS_M;
  for (int c = t; c < Tile::BN; c += Tile::kThreads)
    store_offset(&smem[L::kColumnOffsets + 2 * c], out.column(n0 + c));
  for (int first = 0; first < Tile::BM; first += L::kSlab) {
    for (int r = t; r < L::kSlab; r += Tile::kThreads)
      store_offset(&smem[L::kRowOffsets + 2 * r], out.row(m0 + first + r));
    math.for_each(warp_m, warp_n, [&](int r, int c, float v) {
      if (r >= first && r < first + L::kSlab)
        smem[(r - first) * L::kPitch + c] = __float_as_uint(v);
    });
    __syncthreads();
    // Unsigned: signed division and remainder by the constants cost a
    // dozen instructions an element more.
    constexpr unsigned kWidth = Tile::BN, kHeight = L::kSlab;
    for (unsigned e = threadIdx.x; e < kHeight * kWidth; e += Tile::kThreads) {
      const int r = static_cast<int>(out.columns_contiguous ? e / kWidth : e % kHeight);
      const int c = static_cast<int>(out.columns_contiguous ? e % kWidth : e / kHeight);
      const index_t row = load_offset(&smem[L::kRowOffsets + 2 * r]);
      const index_t column = load_offset(&smem[L::kColumnOffsets + 2 * c]);
      if (row < 0 || column < 0) continue;
      write(m0 + first + r, n0 + c, row + column, __uint_as_float(smem[r * L::kPitch + c]));
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
