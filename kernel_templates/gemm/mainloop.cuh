// The multistage main loop: STAGES - 1 stages are in flight while the
// warps multiply the oldest one.  At step kt the stage that step kt - 1
// read is refilled, after the barrier that ends that read, so one
// barrier per step orders the whole pipeline.  A group is committed at
// every step, empty or not, so that cp_async_wait<STAGES - 2> always
// means "the stage about to be read has landed".
//
// An operand's kMnMajor picks its tile layout: K-major (TileLoader) or
// MN-major (TileLoaderMn), which the math reads accordingly.
#pragma once
#include "gemm/tile_loader.cuh"
#include "gemm/tile_loader_mn.cuh"

namespace convjit_device {

template <int ROWS, class Operand, bool MN = Operand::kMnMajor>
struct LoaderFor {
  typedef TileLoader<ROWS, Operand> type;
};
template <int ROWS, class Operand>
struct LoaderFor<ROWS, Operand, true> {
  typedef TileLoaderMn<ROWS, Operand> type;
};

template <class Math, class OperandA, class OperandB, class Shared>
__device__ __forceinline__ void gemm_mainloop(Shared& smem, Math& math, const OperandA& a,
                                              const OperandB& b, index_t m0, index_t n0,
                                              index_t k_begin, index_t k_end) {
  typedef typename Math::Tile Tile;
  constexpr int kBWords = Tile::BM * kRowWords;  // B's rows follow A's in a stage
  typename LoaderFor<Tile::BM, OperandA>::type load_a;
  typename LoaderFor<Tile::BN, OperandB>::type load_b;
  load_a.init(a, m0);
  load_b.init(b, n0);
  const int warp_m = static_cast<int>(warp_id()) % Tile::WARPS_M;
  const int warp_n = static_cast<int>(warp_id()) / Tile::WARPS_M;
  const index_t steps = (k_end - k_begin + kTileK - 1) / kTileK;
  math.clear();
#pragma unroll
  for (int s = 0; s < Tile::STAGES - 1; ++s) {
    if (s < steps) {
      load_a.load(smem, a, s * Tile::kStageWords, k_begin + s * kTileK);
      load_b.load(smem, b, s * Tile::kStageWords + kBWords, k_begin + s * kTileK);
    }
    cp_async_commit();
  }
  for (index_t kt = 0; kt < steps; ++kt) {
    cp_async_wait<Tile::STAGES - 2>();
    __syncthreads();
    const index_t next = kt + Tile::STAGES - 1;
    if (next < steps) {
      const int word = static_cast<int>(next % Tile::STAGES) * Tile::kStageWords;
      load_a.load(smem, a, word, k_begin + next * kTileK);
      load_b.load(smem, b, word + kBWords, k_begin + next * kTileK);
    }
    cp_async_commit();
    const int word = static_cast<int>(kt % Tile::STAGES) * Tile::kStageWords;
    math.template multiply<OperandA::kMnMajor, OperandB::kMnMajor>(smem, word, word + kBWords,
                                                                   warp_m, warp_n);
  }
  cp_async_wait_all();
  __syncthreads();  // the stages are free for the epilogue
}

}  // namespace convjit_device
