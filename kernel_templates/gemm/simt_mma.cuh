// A thread's share of a tile on FMA units (strict f32): the block's 256
// threads form a 16 x 16 grid, thread (tm, tn) owning rows tm + 16 i
// (i < TM) and columns tn + 16 j (j < TN), an outer-product block.  Per
// 16-byte chunk of K it reads TM + TN vectors of 4 words from the stage
// and does 4 TM TN multiply-adds.
#pragma once
#include "common/vector_memory.cuh"
#include "gemm/tile_shape.cuh"

namespace convjit_device {

template <class TileT>
struct SimtMma {
  typedef TileT Tile;
  static constexpr int TM = Tile::BM / 16, TN = Tile::BN / 16;
  float acc[TM][TN];

  __device__ __forceinline__ void clear() {
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
  }

  // Both operands K-major: SIMT tiles serve f32, which has no MN-major layout.
  template <bool A_MN, bool B_MN, class Shared>
  __device__ __forceinline__ void multiply(Shared& smem, int a0, int b0, int /*warp_m*/,
                                           int /*warp_n*/) {
    static_assert(!A_MN && !B_MN, "SIMT tiles read K-major operands");
    const int tm = static_cast<int>(threadIdx.x) % 16, tn = static_cast<int>(threadIdx.x) / 16;
#pragma unroll
    for (int chunk = 0; chunk < kRowChunks; ++chunk) {
      float a[TM][kChunkWords], b[TN][kChunkWords];
#pragma unroll
      for (int i = 0; i < TM; ++i)
        unpack(a[i], load_128(&smem[a0 + swizzled_word(tm + 16 * i, chunk)]));
#pragma unroll
      for (int j = 0; j < TN; ++j)
        unpack(b[j], load_128(&smem[b0 + swizzled_word(tn + 16 * j, chunk)]));
#pragma unroll
      for (int k = 0; k < kChunkWords; ++k)
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
          for (int j = 0; j < TN; ++j) acc[i][j] += a[i][k] * b[j][k];
    }
  }

  template <class F>
  __device__ __forceinline__ void for_each(int /*warp_m*/, int /*warp_n*/, F&& f) const {
    const int tm = static_cast<int>(threadIdx.x) % 16, tn = static_cast<int>(threadIdx.x) / 16;
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
      for (int j = 0; j < TN; ++j) f(tm + 16 * i, tn + 16 * j, acc[i][j]);
  }

 private:
  __device__ __forceinline__ static void unpack(float (&out)[kChunkWords], const Vec128& v) {
#pragma unroll
    for (int k = 0; k < kChunkWords; ++k) out[k] = __uint_as_float(v.w[k]);
  }
};

}  // namespace convjit_device
