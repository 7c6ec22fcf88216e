// Convolution forward for short reductions over few filters: a stem's 3
// channels (YOLO11n's first conv, 16 filters), YOLO11n's 3 x 3 convs of
// 8 or 16 channels to 8 or 16 filters.  There an implicit GEMM's tiles
// are mostly padding, and the direct kernel (conv/conv_fwd.cuh), a
// thread per output element, reads each input once per filter and writes
// channels-last y a strided element at a time.
//   y = act(alpha * conv(x, w) + bias [+ residual]) + beta * y.
// The block's dynamic shared memory holds all of w in f32, tap-major
// (each tap's filters contiguous, rounded up to whole 16-byte reads, the
// rounding zeros), staged once, then the input halo of its tile of
// output pixels (conv/pixel_filters_shape.cuh), all channels, staged per
// tile with loads that run along x's contiguous dimension.  A thread
// computes STRIP pixels of a tile row by FILTERS filters at a time: per
// tap, one halo value a pixel against the tap's filters, read as 16-byte
// broadcasts, STRIP x FILTERS FMAs.  It writes each pixel's filters a
// 16-byte chunk at a time where y is channels-last
// (common/channel_vectors.cuh), with the fused epilogue
// (common/fused_epilogue.cuh).
// Where it applies (dispatcher/backends/jit/pixel_filters.hpp): a conv
// fwd of one group whose filters and halo fit the shared memory, any
// layout, window, stride, dilation and padding, 1D/2D/3D; and a bwddata
// of unit strides as the forward conv of dy that it is
// (dispatcher/backends/jit/bwddata_as_forward.hpp): the problem's x is
// then dy, its y dx, its filters w transposed, read flipped (FLIP).
#include "common/channel_vectors.cuh"
#include "common/fused_epilogue.cuh"
#include "common/taps.cuh"
#include "common/vector_memory.cuh"
#include "conv/pixel_filters_shape.cuh"

namespace convjit_device {
namespace conv_fwd_pixels {

typedef Problem P;
constexpr int kRows = CONVJIT_PIXELS_TILE_ROWS, kCols = CONVJIT_PIXELS_TILE_COLS;
constexpr int kStrip = CONVJIT_PIXELS_STRIP, kStrips = kCols / kStrip;
constexpr int kFilters = CONVJIT_PIXELS_FILTERS;
constexpr int kFloatsPerRead = CONVJIT_PIXELS_TAP_ALIGNMENT;  // a 16-byte shared read

__device__ __forceinline__ index_t taps() { return P::CG * P::T * P::R * P::S; }
// A tap's filters in shared memory: K rounded up to whole reads.
__device__ __forceinline__ index_t tap_stride() {
  return (P::K + kFloatsPerRead - 1) / kFloatsPerRead * kFloatsPerRead;
}
__device__ __forceinline__ index_t weight_floats() { return taps() * tap_stride(); }

// A tap of the filters as the conv reads them: a bwddata's (FLIP) flipped
// on every axis.
__device__ __forceinline__ index_t read_tap(index_t tap, index_t taps) {
  return P::FLIP ? taps - 1 - tap : tap;
}

// w[k][c][t][r][s] into weights[((c T + t) R + r) S + s][k], by the block.
template <class Shared>
__device__ __forceinline__ void stage_filters(Shared weights, const storage_t* w) {
  for (index_t i = threadIdx.x; i < weight_floats(); i += blockDim.x) {
    const index_t k = i % tap_stride(), tap = i / tap_stride();
    const index_t s = read_tap(tap % P::S, P::S), r = read_tap(tap / P::S % P::R, P::R),
                  t = read_tap(tap / (P::S * P::R) % P::T, P::T), c = tap / (P::S * P::R * P::T);
    weights[i] =
        k < P::K ? load(w[k * P::WS0 + c * P::WS1 + t * P::WS2 + r * P::WS3 + s * P::WS4]) : 0.0f;
  }
}

// A block's tile: kRows x kCols output pixels of image n at depth od, from
// (oh0, ow0); and the input it reads, every channel, from (id0, ih0, iw0).
struct Tile {
  index_t n, od, oh0, ow0;
};
__device__ __forceinline__ index_t row_tiles() { return (P::OH + kRows - 1) / kRows; }
__device__ __forceinline__ index_t col_tiles() { return (P::OW + kCols - 1) / kCols; }
__device__ __forceinline__ index_t tile_count() { return P::N * P::OD * row_tiles() * col_tiles(); }
__device__ __forceinline__ Tile tile_of(index_t b) {
  const index_t depth = b / (row_tiles() * col_tiles());  // (n, od)
  return {depth / P::OD, depth % P::OD, b / col_tiles() % row_tiles() * kRows,
          b % col_tiles() * kCols};
}
__device__ __forceinline__ index_t halo_depth() { return (P::T - 1) * P::DD + 1; }
__device__ __forceinline__ index_t halo_rows() {
  return (kRows - 1) * P::SH + (P::R - 1) * P::DH + 1;
}
__device__ __forceinline__ index_t halo_cols() {
  return (kCols - 1) * P::SW + (P::S - 1) * P::DW + 1;
}
__device__ __forceinline__ index_t halo_plane() { return halo_depth() * halo_rows() * halo_cols(); }

// The tile's halo into halo[c][d][h][w], zero outside x: the block's
// threads stride along x's channels where they are contiguous
// (channels-last), else along W.  The caller puts the barrier after.
template <class Shared>
__device__ __forceinline__ void stage_halo(Shared halo, const storage_t* x, const Tile& b) {
  const index_t d0 = b.od * P::SD - P::PD, h0 = b.oh0 * P::SH - P::PH, w0 = b.ow0 * P::SW - P::PW;
  const bool channels_last = P::XS1 == 1;
  for (index_t e = threadIdx.x; e < P::CG * halo_plane(); e += blockDim.x) {
    const index_t c = channels_last ? e % P::CG : e / halo_plane();
    const index_t at = channels_last ? e / P::CG : e % halo_plane();  // (d, h, w) in the halo
    const index_t d = at / (halo_rows() * halo_cols()), h = at / halo_cols() % halo_rows(),
                  w = at % halo_cols();
    halo[c * halo_plane() + at] = inside(d0 + d, h0 + h, w0 + w, P::D, P::H, P::W)
                                      ? load(x[b.n * P::XS0 + c * P::XS1 + (d0 + d) * P::XS2 +
                                               (h0 + h) * P::XS3 + (w0 + w) * P::XS4])
                                      : 0.0f;
  }
}

// One tap's products for the thread's pixels (row `row`, columns `col` +
// p kStrips of the tile) by the filters from k0.
template <class Shared>
__device__ __forceinline__ void multiply_tap(Shared weights, Shared halo, int row, int col,
                                             index_t k0, index_t c, int t, int r, int s,
                                             float (&acc)[kStrip][kFilters]) {
  float in[kStrip];
#pragma unroll
  for (int p = 0; p < kStrip; ++p)
    in[p] =
        halo[c * halo_plane() + (t * P::DD * halo_rows() + row * P::SH + r * P::DH) * halo_cols() +
             (col + p * kStrips) * P::SW + s * P::DW];
  const index_t tap = ((c * P::T + t) * P::R + r) * P::S + s;
#pragma unroll
  for (int j = 0; j < kFilters; j += kFloatsPerRead) {
    if (k0 + j >= tap_stride()) break;
    const Vec128 f = load_128(&weights[tap * tap_stride() + k0 + j]);
#pragma unroll
    for (int q = 0; q < kFloatsPerRead; ++q)
#pragma unroll
      for (int p = 0; p < kStrip; ++p) acc[p][j + q] += in[p] * __uint_as_float(f.w[q]);
  }
}

// A pixel's filters from k0 to y, a chunk at a time.
__device__ __forceinline__ void store_pixel(storage_t* y, const FusedEpilogue<P>& epilogue,
                                            index_t pixel, index_t k0, const float (&acc)[kFilters],
                                            bool vectors) {
#pragma unroll
  for (int j = 0; j < kFilters; j += kChunkElements) {
    if (k0 + j >= P::K) break;
    float v[kChunkElements];
#pragma unroll
    for (int q = 0; q < kChunkElements; ++q) v[q] = acc[j + q];
    epilogue.apply(v, pixel, k0 + j, P::K, P::YS1, vectors);
    write_channels(y, pixel, k0 + j, P::K, P::YS1, vectors, v, 1.0f, epilogue.beta);
  }
}

// The thread's pixels of tile b, every filter: kFilters at a time.
template <class Shared>
__device__ __forceinline__ void compute_tile(Shared weights, Shared halo, storage_t* y,
                                             const FusedEpilogue<P>& epilogue, const Tile& b,
                                             bool vectors) {
  const int row = static_cast<int>(threadIdx.x) / kStrips,
            col = static_cast<int>(threadIdx.x) % kStrips;
  const index_t oh = b.oh0 + row;
  if (oh >= P::OH) return;
  for (index_t k0 = 0; k0 < P::K; k0 += kFilters) {
    float acc[kStrip][kFilters] = {};
    for (index_t c = 0; c < P::CG; ++c)
#pragma unroll
      for (int t = 0; t < P::T; ++t)
#pragma unroll
        for (int r = 0; r < P::R; ++r)
#pragma unroll
          for (int s = 0; s < P::S; ++s) multiply_tap(weights, halo, row, col, k0, c, t, r, s, acc);
#pragma unroll
    for (int p = 0; p < kStrip; ++p) {
      const index_t ow = b.ow0 + col + p * kStrips;
      if (ow < P::OW)
        store_pixel(y, epilogue, b.n * P::YS0 + b.od * P::YS2 + oh * P::YS3 + ow * P::YS4, k0,
                    acc[p], vectors);
    }
  }
}

}  // namespace conv_fwd_pixels
}  // namespace convjit_device

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* __restrict__ w,
                              convjit_device::storage_t* __restrict__ y, float alpha, float beta,
                              convjit_device::scratch_t* /*workspace*/,
                              const convjit_device::storage_t* __restrict__ bias,
                              const convjit_device::storage_t* __restrict__ residual) {
  using namespace convjit_device;
  using namespace convjit_device::conv_fwd_pixels;
  CONVJIT_DYNAMIC_SHARED_ARRAY(float, smem);
  const auto weights = &smem[0];
  const auto halo = &smem[weight_floats()];
  const FusedEpilogue<P> epilogue{alpha, beta, bias, residual};
  const bool vectors = chunked(P::K, P::YS1, P::YS0, P::YS2, P::YS3, P::YS4) && chunk_aligned(y);
  stage_filters(weights, w);
  // The bound is the same for the whole block, so every thread meets every barrier.
  for (index_t b = blockIdx.x; b < tile_count(); b += gridDim.x) {
    const Tile tile = tile_of(b);
    stage_halo(halo, x, tile);
    __syncthreads();
    compute_tile(weights, halo, y, epilogue, tile, vectors);
    __syncthreads();  // the halo is read before the next staging overwrites it
  }
}
