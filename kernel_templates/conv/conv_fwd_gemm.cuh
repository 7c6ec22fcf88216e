// Convolution forward as an implicit GEMM, per group g, with its fused
// epilogue (common/fused_epilogue.cuh) applied as the tile is stored:
//   y[m, n] = sum_k A[m, k] B[n, k]
//   m = (batch, od, oh, ow)   M = N OD OH OW
//   n = filter k within g     N = K / G
//   k = (t, r, s, c)          K = T R S CG, channel fastest
// A[m, k] = x[batch, g CG + c, od SD - PD + t DD, ...] (zero in the
// padding), B[n, k] = w[g K/G + n, c, t, r, s].  Channel-fastest k makes
// a chunk of A one 16-byte load in channels-last layouts with CG a
// multiple of the chunk; other layouts gather element by element.  B
// reads w itself where w is channels-last too, else (PACKED) its copy in
// k order (conv/packed_filters.cuh), whose rows load in chunks.
//
// convjit_gemm_kernel<Math> is the body; Math (gemm/warp_mma.cuh or
// gemm/simt_mma.cuh) carries the tile.  The JIT prelude names it as
// CONVJIT_GEMM; the emulator instantiates every tile configuration.
#include "common/fused_epilogue.cuh"
#include "common/taps.cuh"
#include "conv/packed_filters.cuh"
#include "gemm/mainloop.cuh"
#include "gemm/simt_mma.cuh"
#include "gemm/tile_epilogue.cuh"
#include "gemm/warp_mma.cuh"

namespace convjit_device {
namespace conv_fwd {

typedef Problem P;

// The taps of GEMM column k: (t, r, s) and channel c.
struct Column {
  index_t c;
  int t, r, s;
};
__device__ __forceinline__ Column column(index_t k) {
  const index_t tap = k / P::CG;
  return {k % P::CG, static_cast<int>(tap / (P::R * P::S)), static_cast<int>(tap / P::S % P::R),
          static_cast<int>(tap % P::S)};
}
__device__ __forceinline__ index_t reduction() { return P::T * P::R * P::S * P::CG; }
__device__ __forceinline__ index_t pixel_count() { return P::N * P::OD * P::OH * P::OW; }

// GEMM row m as an output pixel.
struct Pixel {
  index_t n, od, oh, ow;
};
__device__ __forceinline__ Pixel pixel(index_t m) {
  return {m / (P::OW * P::OH * P::OD), m / (P::OW * P::OH) % P::OD, m / P::OW % P::OH, m % P::OW};
}

// A: rows are output pixels, read through x.
struct Pixels {
  static constexpr bool kMnMajor = false;
  struct Row {
    index_t base;  // batch and group offset in x; -1 past the last pixel
    index_t id0, ih0, iw0;
  };
  const storage_t* base;
  bool vector;
  index_t group;

  __device__ __forceinline__ Row row(index_t m) const {
    if (m >= pixel_count()) return {-1, 0, 0, 0};
    const Pixel p = pixel(m);
    return {p.n * P::XS0 + group * P::CG * P::XS1, p.od * P::SD - P::PD, p.oh * P::SH - P::PH,
            p.ow * P::SW - P::PW};
  }
  __device__ __forceinline__ index_t offset(const Row& row, index_t k) const {
    if (row.base < 0 || k >= reduction()) return -1;
    const Column col = column(k);
    const index_t id = row.id0 + col.t * P::DD, ih = row.ih0 + col.r * P::DH,
                  iw = row.iw0 + col.s * P::DW;
    if (!inside(id, ih, iw, P::D, P::H, P::W)) return -1;
    return row.base + col.c * P::XS1 + id * P::XS2 + ih * P::XS3 + iw * P::XS4;
  }
};

// B: rows are the group's filters, read through w or, PACKED, through
// its copy, where row n is contiguous in k.
struct Filters {
  static constexpr bool kMnMajor = false;
  struct Row {
    index_t base;  // -1 past the group's last filter
  };
  const storage_t* base;
  bool vector;
  index_t group;

  __device__ __forceinline__ Row row(index_t n) const {
    const index_t stride = P::PACKED ? reduction() : P::WS0;
    return {n < P::K / P::G ? (group * (P::K / P::G) + n) * stride : -1};
  }
  __device__ __forceinline__ index_t offset(const Row& row, index_t k) const {
    if (row.base < 0 || k >= reduction()) return -1;
    if (P::PACKED) return row.base + k;
    const Column col = column(k);
    return row.base + col.c * P::WS1 + col.t * P::WS2 + col.r * P::WS3 + col.s * P::WS4;
  }
};

// Where B reads: w, or its packed copy in the workspace.
__device__ __forceinline__ Filters filters(const storage_t* w, scratch_t* workspace,
                                           index_t group) {
  if (P::PACKED) {
    const storage_t* packed = workspace_storage(workspace);
    return {packed, reduction() % kChunkElements == 0 && chunk_aligned(packed), group};
  }
  const bool w_chunked = chunked(P::CG, P::WS1, P::WS0, P::WS2, P::WS3, P::WS4);
  return {w, w_chunked && chunk_aligned(w), group};
}

// The output tile, in y.
struct Outputs {
  storage_t* base;
  bool columns_contiguous;
  index_t group;
  __device__ __forceinline__ index_t row(index_t m) const {
    if (m >= pixel_count()) return -1;
    const Pixel p = pixel(m);
    return p.n * P::YS0 + p.od * P::YS2 + p.oh * P::YS3 + p.ow * P::YS4;
  }
  __device__ __forceinline__ index_t column(index_t n) const {
    return n < P::K / P::G ? (group * (P::K / P::G) + n) * P::YS1 : -1;
  }
};

}  // namespace conv_fwd

template <class Math>
__device__ __forceinline__ void convjit_gemm_kernel(const storage_t* __restrict__ x,
                                                    const storage_t* __restrict__ w,
                                                    storage_t* __restrict__ y, float alpha,
                                                    float beta, scratch_t* workspace,
                                                    const storage_t* __restrict__ bias,
                                                    const storage_t* __restrict__ residual) {
  using namespace conv_fwd;
  typedef typename Math::Tile Tile;
  CONVJIT_SHARED_ARRAY(unsigned, smem, Tile::kSharedWords);
  const index_t tiles_m = (pixel_count() + Tile::BM - 1) / Tile::BM;
  const index_t tiles_n = (P::K / P::G + Tile::BN - 1) / Tile::BN;
  const index_t block = blockIdx.x;
  const index_t tile_m = block % tiles_m, tile_n = block / tiles_m % tiles_n;
  const index_t group = block / (tiles_m * tiles_n);
  const bool x_chunked = chunked(P::CG, P::XS1, P::XS0, P::XS2, P::XS3, P::XS4);
  const Pixels a{x, x_chunked && chunk_aligned(x), group};
  const Filters b = filters(w, workspace, group);
  Math math;
  gemm_mainloop(smem, math, a, b, tile_m * Tile::BM, tile_n * Tile::BN, 0, reduction());
  const Outputs out{y, P::YS1 == 1, group};
  const FusedEpilogue<P> epilogue{alpha, beta, bias, residual};
  const index_t first_filter = group * (P::K / P::G);
  store_tile(smem, math, out, tile_m * Tile::BM, tile_n * Tile::BN,
             [&](index_t, index_t n, index_t at, float v) {
               epilogue.write(y, at, first_filter + n, v);
             });
}

// The first pass where the host asks for it: w copied in B's k order.
template <class Math>
__device__ __forceinline__ void convjit_gemm_prepare(const storage_t* /*x*/,
                                                     const storage_t* __restrict__ w,
                                                     storage_t* /*y*/, float /*alpha*/,
                                                     float /*beta*/, scratch_t* workspace) {
  pack_filters<ForwardFilterOrder>(w, workspace_storage(workspace));
}

}  // namespace convjit_device

#if defined(CONVJIT_GEMM)
CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* __restrict__ w,
                              convjit_device::storage_t* __restrict__ y, float alpha, float beta,
                              convjit_device::scratch_t* workspace,
                              const convjit_device::storage_t* __restrict__ bias,
                              const convjit_device::storage_t* __restrict__ residual) {
  convjit_device::convjit_gemm_kernel<CONVJIT_GEMM>(x, w, y, alpha, beta, workspace, bias,
                                                    residual);
}
CONVJIT_KERNEL convjit_kernel_prepare(const convjit_device::storage_t* __restrict__ x,
                                      const convjit_device::storage_t* __restrict__ w,
                                      convjit_device::storage_t* __restrict__ y, float alpha,
                                      float beta, convjit_device::scratch_t* workspace,
                                      const convjit_device::storage_t* /*bias*/,
                                      const convjit_device::storage_t* /*residual*/) {
  convjit_device::convjit_gemm_prepare<CONVJIT_GEMM>(x, w, y, alpha, beta, workspace);
}
#endif
