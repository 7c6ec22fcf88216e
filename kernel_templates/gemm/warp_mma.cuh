// A warp's share of a tile on tensor cores: a WM x WN block of f32
// accumulators, fed per BK step by ldmatrix from the swizzled stage and
// multiplied with mma.sync.  f16 and bf16 run m16n8k16; f32 runs m16n8k8
// TF32, its operands rounded with to_tf32 (cvt.rna) after the load.  In
// words, both shapes read a 16 x 2-chunk A block and an 8 x 2-chunk B
// block per k step, so the addressing below serves all three.
#pragma once
#include "common/ldmatrix.cuh"
#include "common/mma.cuh"
#include "gemm/tile_shape.cuh"

namespace convjit_device {

template <class TileT>
struct WarpMma {
  typedef TileT Tile;
  static constexpr int kTilesM = Tile::WM / 16;  // m16 tiles
  static constexpr int kTilesN = Tile::WN / 8;   // n8 tiles
  static constexpr int kPairsN = kTilesN / 2;    // ldmatrix.x4 loads two n8 tiles
  static constexpr int kSteps = kRowChunks / 2;  // k steps per BK
  float acc[kTilesM][kTilesN][4];

  __device__ __forceinline__ void clear() {
#pragma unroll
    for (int i = 0; i < kTilesM; ++i)
#pragma unroll
      for (int j = 0; j < kTilesN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.0f;
  }

  // One stage: A rows at words [a0, ...), B rows at [b0, ...); an
  // MN-major operand (A_MN, B_MN: gemm/tile_loader_mn.cuh) is read with
  // ldmatrix.trans, which hands out the same fragments.
  template <bool A_MN, bool B_MN, class Shared>
  __device__ __forceinline__ void multiply(Shared& smem, int a0, int b0, int warp_m,
                                           int warp_n) {
    const int lane = static_cast<int>(lane_id());
    const int matrix = lane / 8, row_in_matrix = lane % 8;
#pragma unroll
    for (int step = 0; step < kSteps; ++step) {
      unsigned a[kTilesM][4], b[kTilesN][2];
#pragma unroll
      for (int i = 0; i < kTilesM; ++i) {
        // Matrices: rows +0/+8 (matrix % 2), k +0/+8 (matrix / 2).
        const int row = warp_m * Tile::WM + 16 * i + 8 * (matrix % 2);
        if constexpr (A_MN) {
          const int k = 16 * step + 8 * (matrix / 2) + row_in_matrix;
          ldmatrix_x4_trans(a[i], &smem[a0 + swizzled_mn_word<Tile::BM>(k, row / 8)]);
        } else {
          ldmatrix_x4(a[i], &smem[a0 + swizzled_word(row + row_in_matrix, 2 * step + matrix / 2)]);
        }
      }
#pragma unroll
      for (int p = 0; p < kPairsN; ++p) {
        // Matrices: n rows +0/+8 (matrix / 2), k +0/+8 (matrix % 2).
        const int row = warp_n * Tile::WN + 16 * p + 8 * (matrix / 2);
        unsigned r[4];
        if constexpr (B_MN) {
          const int k = 16 * step + 8 * (matrix % 2) + row_in_matrix;
          ldmatrix_x4_trans(r, &smem[b0 + swizzled_mn_word<Tile::BN>(k, row / 8)]);
        } else {
          ldmatrix_x4(r, &smem[b0 + swizzled_word(row + row_in_matrix, 2 * step + matrix % 2)]);
        }
        b[2 * p][0] = r[0], b[2 * p][1] = r[1], b[2 * p + 1][0] = r[2], b[2 * p + 1][1] = r[3];
      }
      round_operands(a, b);
#pragma unroll
      for (int i = 0; i < kTilesM; ++i)
#pragma unroll
        for (int j = 0; j < kTilesN; ++j) mma_step(acc[i][j], a[i], b[j]);
    }
  }

  // Calls f(row, column, value) for every accumulator, in the warp tile's
  // coordinates within the block tile.
  template <class F>
  __device__ __forceinline__ void for_each(int warp_m, int warp_n, F&& f) const {
    const int lane = static_cast<int>(lane_id());
    const int group = lane / 4, quad = lane % 4;
#pragma unroll
    for (int i = 0; i < kTilesM; ++i)
#pragma unroll
      for (int j = 0; j < kTilesN; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          f(warp_m * Tile::WM + 16 * i + group + 8 * (e / 2),
            warp_n * Tile::WN + 8 * j + 2 * quad + e % 2, acc[i][j][e]);
  }

 private:
  __device__ __forceinline__ static void round_operands(unsigned (&a)[kTilesM][4],
                                                        unsigned (&b)[kTilesN][2]) {
#if CONVJIT_DTYPE == 0
#pragma unroll
    for (int i = 0; i < kTilesM; ++i)
#pragma unroll
      for (int e = 0; e < 4; ++e) a[i][e] = to_tf32(__uint_as_float(a[i][e]));
#pragma unroll
    for (int j = 0; j < kTilesN; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e) b[j][e] = to_tf32(__uint_as_float(b[j][e]));
#else
    (void)a, (void)b;
#endif
  }
  __device__ __forceinline__ static void mma_step(float (&d)[4], const unsigned (&a)[4],
                                                  const unsigned (&b)[2]) {
#if CONVJIT_DTYPE == 0
    mma_m16n8k8_tf32(d, a, b, d);
#elif CONVJIT_DTYPE == 1
    mma_m16n8k16_f16(d, a, b, d);
#else
    mma_m16n8k16_bf16(d, a, b, d);
#endif
  }
};

}  // namespace convjit_device
