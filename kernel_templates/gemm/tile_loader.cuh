// Fills one operand's rows of a pipeline stage from global memory.  An
// operand is an implicit matrix: `row(i)` describes GEMM row i (a pixel, a
// filter, ...) once per block, and `offset(row, k)` is the element
// offset of column k in the tensor, or -1 where the matrix holds a zero
// (padding, a row or k past the end).  Each thread owns one 16-byte chunk
// column and every 64th row.
//   vector: a chunk's elements are contiguous and 16-byte aligned whenever
//           its first one exists (the operand proves it from its strides
//           and the pointer): one cp.async of 16 bytes, zero-filled.
//   scalar: element by element; f32 through 4-byte cp.async, 16-bit
//           elements gathered in pairs into registers and stored.
#pragma once
#include "common/cp_async.cuh"
#include "common/vector_memory.cuh"
#include "gemm/tile_shape.cuh"

namespace convjit_device {

// K per tile row (64 bytes).
constexpr int kTileK = kRowChunks * kChunkElements;

// The bits of a storage element (f32 bits, or the 16-bit value).
__device__ __forceinline__ unsigned element_bits(const storage_t* base, index_t offset) {
  return offset < 0 ? 0u : storage_bits(base[offset]);
}

template <int ROWS, class Operand>
struct TileLoader {
  static constexpr int kRowsPerPass = 256 / kRowChunks;
  static constexpr int kPasses = (ROWS + kRowsPerPass - 1) / kRowsPerPass;
  typename Operand::Row rows[kPasses];
  int chunk;

  __device__ __forceinline__ void init(const Operand& op, index_t first_row) {
    chunk = static_cast<int>(threadIdx.x) % kRowChunks;
#pragma unroll
    for (int p = 0; p < kPasses; ++p)
      rows[p] = op.row(first_row + static_cast<int>(threadIdx.x) / kRowChunks + p * kRowsPerPass);
  }

  // Issues the copies of K columns [k0, k0 + kTileK) into rows at word `first_word`.
  template <class Shared>
  __device__ __forceinline__ void load(Shared& smem, const Operand& op, int first_word,
                                       index_t k0) const {
    const index_t k = k0 + chunk * kChunkElements;
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      const int row = static_cast<int>(threadIdx.x) / kRowChunks + p * kRowsPerPass;
      if (ROWS % kRowsPerPass != 0 && row >= ROWS) continue;
      const int word = first_word + swizzled_word(row, chunk);
      if (op.vector) {
        const index_t at = op.offset(rows[p], k);
        cp_async_cg(&smem[word], op.base + (at < 0 ? 0 : at), at < 0 ? 0 : 16);
      } else {
        load_scalar(smem, op, rows[p], word, k);
      }
    }
  }

 private:
  template <class Shared>
  __device__ __forceinline__ void load_scalar(Shared& smem, const Operand& op,
                                              const typename Operand::Row& row, int word,
                                              index_t k) const {
    // Rolled: the slow path stays small, which keeps NVRTC's compile short.
#pragma unroll 1
    for (int step = 0; step < kChunkWords; ++step) {
      const int w = chunk_word_at(step);
#if CONVJIT_DTYPE == 0
      const index_t at = op.offset(row, k + w);
      cp_async_ca<4>(&smem[word + w], op.base + (at < 0 ? 0 : at), at < 0 ? 0 : 4);
#else
      const unsigned lo = element_bits(op.base, op.offset(row, k + 2 * w));
      const unsigned hi = element_bits(op.base, op.offset(row, k + 2 * w + 1));
      smem[word + w] = lo | hi << 16;
#endif
    }
  }
};

}  // namespace convjit_device
