// Convolution backward filter as an implicit GEMM, per group g:
//   dw[m, n] = sum_k A[m, k] B[n, k]
//   m = filter f within g                 M = K / G
//   n = (t, r, s, c), channel fastest     N = T R S CG
//   k = (batch, od, oh, ow)               K = N OD OH OW
// A[m, k] = dy[batch, g K/G + f, od, oh, ow], B[n, k] = x[batch, g CG + c,
// od SD - PD + t DD, ...] (zero in the padding).
//
// The reduction is long and M and N are small, so P::SPLIT blocks share
// each output tile, each over its own slice of K.  With SPLIT > 1 they
// write f32 partial tiles to the workspace and convjit_gemm_finish adds
// them in split order: the same sum on every run, and no atomics.
//
// In channels-last layouts (16-bit, channels per group a multiple of 8)
// both operands' rows run along memory: 16-byte chunks of 8 filters or
// 8 channels, stored MN-major (gemm/tile_loader_mn.cuh).  Otherwise the
// tiles are K-major, where a chunk of K is 16 contiguous bytes only where
// pixels are: channels-first dy with OW a multiple of the chunk (A), and
// x likewise for a 1x1, unit-stride, unpadded conv (B); other layouts
// gather.
#include "common/grid.cuh"
#include "common/taps.cuh"
#include "gemm/mainloop.cuh"
#include "gemm/simt_mma.cuh"
#include "gemm/tile_epilogue.cuh"
#include "gemm/warp_mma.cuh"

namespace convjit_device {
namespace conv_bwdfilt {

typedef Problem P;

__device__ __forceinline__ index_t filters_per_group() { return P::K / P::G; }
__device__ __forceinline__ index_t columns() { return P::T * P::R * P::S * P::CG; }
__device__ __forceinline__ index_t reduction() { return P::N * P::OD * P::OH * P::OW; }
// The partial sums of one split: every group's M x N.
__device__ __forceinline__ index_t weight_count() { return P::G * filters_per_group() * columns(); }

// GEMM column k as an output pixel.
struct Pixel {
  index_t n, od, oh, ow;
};
__device__ __forceinline__ Pixel pixel(index_t k) {
  return {k / (P::OW * P::OH * P::OD), k / (P::OW * P::OH) % P::OD, k / P::OW % P::OH, k % P::OW};
}

// GEMM column n as a tap and channel.
struct Tap {
  index_t c, t, r, s;
};
__device__ __forceinline__ Tap tap(index_t n) {
  const index_t rs = n / P::CG;
  return {n % P::CG, rs / (P::R * P::S), rs / P::S % P::R, rs % P::S};
}

// A: rows are the group's filters, read through dy; MN: the tile is
// stored filter-major (channels-last dy, 16-bit).
template <bool MN>
struct Gradients {
  static constexpr bool kMnMajor = MN;
  struct Row {
    index_t base;  // the filter's offset in dy; -1 past the group's last
  };
  const storage_t* base;
  bool vector;
  index_t group;

  __device__ __forceinline__ Row row(index_t f) const {
    return {f < filters_per_group() ? (group * filters_per_group() + f) * P::YS1 : -1};
  }
  __device__ __forceinline__ index_t offset(const Row& row, index_t k) const {
    if (row.base < 0 || k >= reduction()) return -1;
    const Pixel p = pixel(k);
    return row.base + p.n * P::YS0 + p.od * P::YS2 + p.oh * P::YS3 + p.ow * P::YS4;
  }
};

// B: rows are the group's (tap, channel) pairs, read through x; MN: the
// tile is stored channel-major (channels-last x, 16-bit).
template <bool MN>
struct Inputs {
  static constexpr bool kMnMajor = MN;
  struct Row {
    index_t base;  // the channel's offset in x; -1 past the last column
    index_t id0, ih0, iw0;
  };
  const storage_t* base;
  bool vector;
  index_t group;

  __device__ __forceinline__ Row row(index_t n) const {
    if (n >= columns()) return {-1, 0, 0, 0};
    const Tap q = tap(n);
    return {(group * P::CG + q.c) * P::XS1, q.t * P::DD - P::PD, q.r * P::DH - P::PH,
            q.s * P::DW - P::PW};
  }
  __device__ __forceinline__ index_t offset(const Row& row, index_t k) const {
    if (row.base < 0 || k >= reduction()) return -1;
    const Pixel p = pixel(k);
    const index_t id = row.id0 + p.od * P::SD, ih = row.ih0 + p.oh * P::SH,
                  iw = row.iw0 + p.ow * P::SW;
    if (!inside(id, ih, iw, P::D, P::H, P::W)) return -1;
    return row.base + p.n * P::XS0 + id * P::XS2 + ih * P::XS3 + iw * P::XS4;
  }
};

// The output, in dw.
struct Weights {
  storage_t* base;
  bool columns_contiguous;
  index_t group;

  __device__ __forceinline__ index_t row(index_t f) const {
    return f < filters_per_group() ? (group * filters_per_group() + f) * P::WS0 : -1;
  }
  __device__ __forceinline__ index_t column(index_t n) const {
    if (n >= columns()) return -1;
    const Tap q = tap(n);
    return q.c * P::WS1 + q.t * P::WS2 + q.r * P::WS3 + q.s * P::WS4;
  }
};

// x's pixels run along memory exactly as dy's: a 1x1 window at unit
// stride without begin padding, and no end padding either (it would make
// dy wider than x, so a chunk of dy's pixels would run past x's rows).
__device__ __forceinline__ bool pixels_align() {
  return P::T * P::R * P::S == 1 && P::SD * P::SH * P::SW == 1 && P::PD + P::PH + P::PW == 0 &&
         P::OD == P::D && P::OH == P::H && P::OW == P::W;
}

// The block's slice of K: split s reduces K steps
// [s steps / SPLIT, (s + 1) steps / SPLIT).
struct Slice {
  index_t begin, end;
};
__device__ __forceinline__ Slice slice(index_t split) {
  const index_t steps = (reduction() + kTileK - 1) / kTileK;
  return {split * steps / P::SPLIT * kTileK, (split + 1) * steps / P::SPLIT * kTileK};
}

// One block's tile over its slice, written to dw, or with SPLIT > 1 as
// f32 partial sums to the workspace.
template <class Math, class OperandA, class OperandB, class Shared>
__device__ __forceinline__ void reduce_tile(Shared& smem, const OperandA& a, const OperandB& b,
                                            storage_t* dw, scratch_t* partial, float alpha,
                                            float beta, index_t m0, index_t n0, index_t split) {
  typedef typename Math::Tile Tile;
  Math math;
  const Slice k = slice(split);
  gemm_mainloop(smem, math, a, b, m0, n0, k.begin, k.end);
  if (P::SPLIT == 1) {
    store_tile(smem, math, Weights{dw, P::WS1 == 1, a.group}, m0, n0, alpha, beta);
    return;
  }
  const int warp_m = static_cast<int>(warp_id()) % Tile::WARPS_M;
  const int warp_n = static_cast<int>(warp_id()) / Tile::WARPS_M;
  scratch_t* const tile =
      partial + split * weight_count() + a.group * filters_per_group() * columns();
  math.for_each(warp_m, warp_n, [&](int r, int c, float v) {
    if (m0 + r < filters_per_group() && n0 + c < columns())
      tile[(m0 + r) * columns() + n0 + c] = v;
  });
}

}  // namespace conv_bwdfilt

// Blocks run tile_m fastest, then tile_n, split and group.
template <class Math>
__device__ __forceinline__ void convjit_gemm_kernel(const storage_t* __restrict__ x,
                                                    const storage_t* __restrict__ dy,
                                                    storage_t* __restrict__ dw, float alpha,
                                                    float beta, scratch_t* __restrict__ partial) {
  using namespace conv_bwdfilt;
  typedef typename Math::Tile Tile;
  CONVJIT_SHARED_ARRAY(unsigned, smem, Tile::kSharedWords);
  const index_t tiles_m = (filters_per_group() + Tile::BM - 1) / Tile::BM;
  const index_t tiles_n = (columns() + Tile::BN - 1) / Tile::BN;
  const index_t block = blockIdx.x;
  const index_t tile_m = block % tiles_m, tile_n = block / tiles_m % tiles_n;
  const index_t split = block / (tiles_m * tiles_n) % P::SPLIT;
  const index_t group = block / (tiles_m * tiles_n * P::SPLIT);
  const index_t m0 = tile_m * Tile::BM, n0 = tile_n * Tile::BN;
#if CONVJIT_DTYPE != 0
  if (chunked(filters_per_group(), P::YS1, P::YS0, P::YS2, P::YS3, P::YS4) &&
      chunked(P::CG, P::XS1, P::XS0, P::XS2, P::XS3, P::XS4)) {
    const Gradients<true> a{dy, chunk_aligned(dy), group};
    const Inputs<true> b{x, chunk_aligned(x), group};
    reduce_tile<Math>(smem, a, b, dw, partial, alpha, beta, m0, n0, split);
    return;
  }
#endif
  const bool dy_chunked = chunked(P::OW, P::YS4, P::YS0, P::YS1, P::YS2, P::YS3);
  const bool x_chunked = pixels_align() && chunked(P::OW, P::XS4, P::XS0, P::XS1, P::XS2, P::XS3);
  const Gradients<false> a{dy, dy_chunked && chunk_aligned(dy), group};
  const Inputs<false> b{x, x_chunked && chunk_aligned(x), group};
  reduce_tile<Math>(smem, a, b, dw, partial, alpha, beta, m0, n0, split);
}

// The second pass of a split reduction: one thread per weight.
template <class Math>
__device__ __forceinline__ void convjit_gemm_finish(const storage_t* /*x*/,
                                                    const storage_t* /*dy*/,
                                                    storage_t* __restrict__ dw, float alpha,
                                                    float beta,
                                                    scratch_t* __restrict__ partial) {
  using namespace conv_bwdfilt;
  const index_t weights = weight_count();
  for (index_t e = thread_index(); e < weights; e += thread_count()) {
    float acc = 0.0f;
    for (index_t split = 0; split < P::SPLIT; ++split) acc += partial[split * weights + e];
    const index_t per_group = filters_per_group() * columns();
    const Weights out{dw, false, e / per_group};
    const index_t at = out.row(e % per_group / columns()) + out.column(e % columns());
    scale_store(dw + at, acc, alpha, beta);
  }
}

}  // namespace convjit_device

#if defined(CONVJIT_GEMM)
CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* __restrict__ dy,
                              convjit_device::storage_t* __restrict__ dw, float alpha, float beta,
                              convjit_device::scratch_t* __restrict__ workspace) {
  convjit_device::convjit_gemm_kernel<CONVJIT_GEMM>(x, dy, dw, alpha, beta, workspace);
}
CONVJIT_KERNEL convjit_kernel_finish(const convjit_device::storage_t* __restrict__ x,
                                     const convjit_device::storage_t* __restrict__ dy,
                                     convjit_device::storage_t* __restrict__ dw, float alpha,
                                     float beta,
                                     convjit_device::scratch_t* __restrict__ workspace) {
  convjit_device::convjit_gemm_finish<CONVJIT_GEMM>(x, dy, dw, alpha, beta, workspace);
}
#endif
