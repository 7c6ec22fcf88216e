// Fills one operand's tile of a pipeline stage MN-major: for operands
// whose rows, not their K, run along memory (bwdfilt's dy and x in
// channels-last layouts, where K is the pixel).  The stage holds kTileK
// rows of k, each with the tile's ROWS elements (swizzled_mn_word), and
// the warps read it with ldmatrix.trans (gemm/warp_mma.cuh).  16-bit
// elements only: ldmatrix transposes 16-bit elements.
//
// The operand is the same implicit matrix as for TileLoader (row(i),
// offset(row, k), base) with kMnMajor set; its `vector` promises that
// rows 8j .. 8j + 7 of a column are contiguous and 16-byte aligned
// whenever row 8j's element exists.  Each thread owns one chunk of 8
// rows and every (256 / (ROWS / 8))-th k row.
#pragma once
#include "common/cp_async.cuh"
#include "gemm/tile_loader.cuh"

namespace convjit_device {

template <int ROWS, class Operand>
struct TileLoaderMn {
#if CONVJIT_DTYPE == 0
  static_assert(ROWS < 0, "MN-major tiles are for 16-bit elements");
#endif
  static constexpr int kChunks = ROWS / 8;  // chunks in one k row
  static constexpr int kRowsPerPass = 256 / kChunks;
  static constexpr int kPasses = (kTileK + kRowsPerPass - 1) / kRowsPerPass;
  typename Operand::Row row;  // the first of the thread's 8 rows
  index_t first;              // its index
  int chunk;

  __device__ __forceinline__ void init(const Operand& op, index_t first_row) {
    chunk = static_cast<int>(threadIdx.x) % kChunks;
    first = first_row + 8 * chunk;
    row = op.row(first);
  }

  // Issues the copies of K rows [k0, k0 + kTileK) into the tile at word `first_word`.
  template <class Shared>
  __device__ __forceinline__ void load(Shared& smem, const Operand& op, int first_word,
                                       index_t k0) const {
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const int k_row = static_cast<int>(threadIdx.x) / kChunks + p * kRowsPerPass;
      if (kTileK % kRowsPerPass != 0 && k_row >= kTileK) continue;
      const int word = first_word + swizzled_mn_word<ROWS>(k_row, chunk);
      if (op.vector) {
        const index_t at = op.offset(row, k0 + k_row);
        cp_async_cg(&smem[word], op.base + (at < 0 ? 0 : at), at < 0 ? 0 : 16);
      } else {
        load_scalar(smem, op, word, k0 + k_row);
      }
    }
  }

 private:
  // Unaligned or strided rows: each of the 8 rows on its own, pairs
  // packed into words (slow, and only for what the vector path cannot take).
  template <class Shared>
  __device__ __forceinline__ void load_scalar(Shared& smem, const Operand& op, int word,
                                              index_t k) const {
    // Rolled: the slow path stays small, which keeps NVRTC's compile short.
#pragma unroll 1
    for (int step = 0; step < kChunkWords; ++step) {
      const int w = chunk_word_at(step);
      const unsigned lo = element_bits(op.base, op.offset(op.row(first + 2 * w), k));
      const unsigned hi = element_bits(op.base, op.offset(op.row(first + 2 * w + 1), k));
      smem[word + w] = lo | hi << 16;
    }
  }
};

}  // namespace convjit_device
