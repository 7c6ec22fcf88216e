// A thread block's GEMM tile: the block computes BM x BN outputs over the
// full reduction, in steps of BK, with a STAGES-deep shared-memory
// pipeline; WARPS_M x WARPS_N warps each own a WM x WN sub-tile.
#pragma once
#include "common/kernel_abi.cuh"
#include "common/warp.cuh"

namespace convjit_device {

// 64 bytes of K per tile row, as 4 chunks of 16 bytes (4 words each).
constexpr int kRowWords = 16;
constexpr int kChunkWords = 4;
constexpr int kRowChunks = kRowWords / kChunkWords;

// The word of its 16-byte chunk a lane fills at `step` of a word-by-word
// (scalar) fill.  A warp's chunks lie 4 words apart, so the same word of
// every chunk would be a 4-way bank conflict; each eighth of the warp
// starting at another word makes every step conflict-free.
__device__ __forceinline__ int chunk_word_at(int step) {
  return (static_cast<int>(lane_id() / 8) + step) % kChunkWords;
}

template <int BM_, int BN_, int WARPS_M_, int WARPS_N_, int STAGES_>
struct TileShape {
  static constexpr int BM = BM_, BN = BN_, WARPS_M = WARPS_M_, WARPS_N = WARPS_N_;
  static constexpr int STAGES = STAGES_;
  static constexpr int kThreads = 32 * WARPS_M * WARPS_N;
  static constexpr int WM = BM / WARPS_M, WN = BN / WARPS_N;
  // Words of one pipeline stage (A rows, then B rows) and of them all.
  static constexpr int kStageWords = (BM + BN) * kRowWords;
  static constexpr int kSharedWords = STAGES * kStageWords;
  static_assert(kThreads == 256, "the JIT launches 256-thread blocks");
  static_assert(WM % 16 == 0 && WN % 8 == 0, "warp tiles are whole mma tiles");
  static_assert(kSharedWords * 4 <= 48 * 1024, "static shared memory is at most 48 KiB");
};

// Where word `word` of chunk `chunk` of tile row `row` lives: chunks are
// XOR-swizzled by row pair, so that the 8 rows an ldmatrix (or a column
// of cp.async writes) touches fall in 8 distinct 16-byte bank groups.
__device__ __forceinline__ int swizzled_word(int row, int chunk, int word = 0) {
  return row * kRowWords + ((chunk ^ ((row >> 1) & 3)) * kChunkWords) + word;
}

// The same for an operand stored MN-major (gemm/tile_loader_mn.cuh): each
// of the stage's k rows holds the tile's ROWS 16-bit elements, ROWS / 8
// chunks, and ldmatrix.trans reads one chunk column of 8 consecutive k
// rows.  XOR-ing the chunk with the k row (by row pair where a row is
// only half a 128-byte line) puts those 8 chunks in 8 distinct bank groups.
template <int ROWS>
__device__ __forceinline__ int swizzled_mn_word(int k_row, int chunk) {
  constexpr int kChunks = ROWS / 8;
  static_assert(kChunks == 4 || kChunks % 8 == 0, "MN-major rows are 32 or a multiple of 64");
  const int swizzle = kChunks == 4 ? (k_row >> 1) & 3 : k_row & 7;
  return (k_row * kChunks + (chunk ^ swizzle)) * kChunkWords;
}

}  // namespace convjit_device
