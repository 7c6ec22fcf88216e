// Convolution forward, and bwddata as the forward conv of dy it is, for
// short reductions over few filters: a stem's 3 channels (YOLO11n's
// first conv, 16 filters), YOLO11n's 3 x 3 convs of 8 or 16 channels to
// 8 or 16 filters and their bwddata.  There an implicit GEMM's tiles
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
// layout, window, stride, dilation and padding, 1D/2D/3D; and a bwddata,
// its problem's x then dy, its y dx, its filters w transposed: of unit
// strides as the forward conv of dy that it is, the filters read flipped
// (FLIP; dispatcher/backends/jit/bwddata_as_forward.hpp), strided by its
// stride phases (PHASED, below).
#include "common/channel_vectors.cuh"
#include "common/fused_epilogue.cuh"
#include "common/taps.cuh"
#include "common/vector_memory.cuh"
#include "conv/pixel_filters_shape.cuh"

namespace convjit_device {
namespace conv_pixels {

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

// A block's tile along one axis (D, H or W): outputs out0 + i out_step
// for i in [0, tile), output i reading the halo from i in_step on, tap r
// at tap_offset(r) further.  A conv fwd's outputs are consecutive, its
// taps every one.  A strided bwddata (PHASED) runs its stride phases as
// forward convs of dy (conv/conv_bwddata_wgmma.cuh's decomposition): a
// tile's outputs are one phase's, `stride` apart, and the taps r that
// land on it are those whose phase + pad - r dilation is a multiple of
// the stride, read at dy's j + (phase + pad - r dilation) / stride; the
// halo starts at the last tap's (none: last = -1), tap r is (last - r)
// dilation / stride rows further.
struct Axis {
  index_t out, stride, pad, dilation, taps;
};
__device__ __forceinline__ Axis axis_d() { return {P::OD, P::SD, P::PD, P::DD, P::T}; }
__device__ __forceinline__ Axis axis_h() { return {P::OH, P::SH, P::PH, P::DH, P::R}; }
__device__ __forceinline__ Axis axis_w() { return {P::OW, P::SW, P::PW, P::DW, P::S}; }

struct AxisTile {
  index_t out0, out_step, in0, in_step, phase, last;
};

__device__ __forceinline__ index_t phases(const Axis& a) { return P::PHASED ? a.stride : 1; }
// A phase's outputs at most.
__device__ __forceinline__ index_t phase_outputs(const Axis& a) {
  return (a.out + phases(a) - 1) / phases(a);
}
// The halo's extent for a tile of `tile` outputs: the most any phase reads.
__device__ __forceinline__ index_t halo_extent(const Axis& a, index_t tile) {
  return P::PHASED ? tile + (a.taps - 1) * a.dilation / a.stride
                   : (tile - 1) * a.stride + (a.taps - 1) * a.dilation + 1;
}
__device__ __forceinline__ bool lands(const Axis& a, const AxisTile& t, index_t r) {
  return !P::PHASED || (t.phase + a.pad - r * a.dilation) % a.stride == 0;
}
__device__ __forceinline__ index_t tap_offset(const Axis& a, const AxisTile& t, index_t r) {
  return P::PHASED ? (t.last - r) * a.dilation / a.stride : r * a.dilation;
}
// The tile of phase `phase` from its output j0.
__device__ __forceinline__ AxisTile axis_tile(const Axis& a, index_t j0, index_t phase) {
  if (!P::PHASED) return {j0, 1, j0 * a.stride - a.pad, a.stride, 0, a.taps - 1};
  AxisTile t{phase + j0 * a.stride, a.stride, 0, 1, phase, -1};
  for (index_t r = 0; r < a.taps; ++r)
    if (lands(a, t, r)) t.last = r;
  t.in0 = j0 + (t.last < 0 ? 0 : (phase + a.pad - t.last * a.dilation) / a.stride);
  return t;
}

// A block's tile: 1 x kRows x kCols outputs of image n (of one stride
// phase where PHASED), and the input it reads, every channel.
struct Tile {
  index_t n;
  AxisTile d, h, w;
};
__device__ __forceinline__ index_t row_tiles() {
  return (phase_outputs(axis_h()) + kRows - 1) / kRows;
}
__device__ __forceinline__ index_t col_tiles() {
  return (phase_outputs(axis_w()) + kCols - 1) / kCols;
}
__device__ __forceinline__ index_t phase_count() {
  return phases(axis_d()) * phases(axis_h()) * phases(axis_w());
}
__device__ __forceinline__ index_t tile_count() {
  return P::N * phase_count() * phase_outputs(axis_d()) * row_tiles() * col_tiles();
}
// Tile b: the phase varies fastest, so that the blocks that run at once
// share the phases' unequal work (their taps) alike; then W, H, D, N.
__device__ __forceinline__ Tile tile_of(index_t b) {
  const index_t phase = b % phase_count(), at = b / phase_count();
  const index_t col = at % col_tiles(), row = at / col_tiles() % row_tiles();
  const index_t depth = at / (col_tiles() * row_tiles());  // (n, jd)
  const index_t pw = phase % phases(axis_w()), ph = phase / phases(axis_w()) % phases(axis_h()),
                pd = phase / (phases(axis_w()) * phases(axis_h()));
  return {depth / phase_outputs(axis_d()), axis_tile(axis_d(), depth % phase_outputs(axis_d()), pd),
          axis_tile(axis_h(), row * kRows, ph), axis_tile(axis_w(), col * kCols, pw)};
}
__device__ __forceinline__ index_t halo_depth() { return halo_extent(axis_d(), 1); }
__device__ __forceinline__ index_t halo_rows() { return halo_extent(axis_h(), kRows); }
__device__ __forceinline__ index_t halo_cols() { return halo_extent(axis_w(), kCols); }
__device__ __forceinline__ index_t halo_plane() { return halo_depth() * halo_rows() * halo_cols(); }

// The tile's halo into halo[c][d][h][w], zero outside x: the block's
// threads stride along x's channels where they are contiguous
// (channels-last), else along W.  The caller puts the barrier after.
template <class Shared>
__device__ __forceinline__ void stage_halo(Shared halo, const storage_t* x, const Tile& b) {
  const index_t d0 = b.d.in0, h0 = b.h.in0, w0 = b.w.in0;
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

// One tap's products for the thread's pixels by the filters from k0:
// the pixels' halo values from `at`, kStrips outputs apart along W.
template <class Shared>
__device__ __forceinline__ void multiply_tap(Shared weights, Shared halo, index_t at,
                                             index_t in_step, index_t k0, index_t tap,
                                             float (&acc)[kStrip][kFilters]) {
  float in[kStrip];
#pragma unroll
  for (int p = 0; p < kStrip; ++p) in[p] = halo[at + p * kStrips * in_step];
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

// Channel c's taps that land on tile b, for the thread's pixels (row
// `row`, columns `col` + p kStrips of the tile) by the filters from k0.
template <class Shared>
__device__ __forceinline__ void multiply_channel(Shared weights, Shared halo, const Tile& b,
                                                 index_t row, index_t col, index_t k0, index_t c,
                                                 float (&acc)[kStrip][kFilters]) {
  const Axis ad = axis_d(), ah = axis_h(), aw = axis_w();
#pragma unroll
  for (int t = 0; t < P::T; ++t) {
    if (!lands(ad, b.d, t)) continue;
#pragma unroll
    for (int r = 0; r < P::R; ++r) {
      if (!lands(ah, b.h, r)) continue;
      const index_t plane_row =
          tap_offset(ad, b.d, t) * halo_rows() + row * b.h.in_step + tap_offset(ah, b.h, r);
#pragma unroll
      for (int s = 0; s < P::S; ++s) {
        if (!lands(aw, b.w, s)) continue;
        const index_t at =
            c * halo_plane() + plane_row * halo_cols() + col * b.w.in_step + tap_offset(aw, b.w, s);
        multiply_tap(weights, halo, at, b.w.in_step, k0, ((c * P::T + t) * P::R + r) * P::S + s,
                     acc);
      }
    }
  }
}

// The thread's pixels of tile b, every filter: kFilters at a time.
template <class Shared>
__device__ __forceinline__ void compute_tile(Shared weights, Shared halo, storage_t* y,
                                             const FusedEpilogue<P>& epilogue, const Tile& b,
                                             bool vectors) {
  const int row = static_cast<int>(threadIdx.x) / kStrips,
            col = static_cast<int>(threadIdx.x) % kStrips;
  const index_t oh = b.h.out0 + row * b.h.out_step;
  if (b.d.out0 >= P::OD || oh >= P::OH) return;
  for (index_t k0 = 0; k0 < P::K; k0 += kFilters) {
    float acc[kStrip][kFilters] = {};
    for (index_t c = 0; c < P::CG; ++c) multiply_channel(weights, halo, b, row, col, k0, c, acc);
#pragma unroll
    for (int p = 0; p < kStrip; ++p) {
      const index_t ow = b.w.out0 + (col + p * kStrips) * b.w.out_step;
      if (ow < P::OW)
        store_pixel(y, epilogue, b.n * P::YS0 + b.d.out0 * P::YS2 + oh * P::YS3 + ow * P::YS4, k0,
                    acc[p], vectors);
    }
  }
}

}  // namespace conv_pixels
}  // namespace convjit_device

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* __restrict__ w,
                              convjit_device::storage_t* __restrict__ y, float alpha, float beta,
                              convjit_device::scratch_t* /*workspace*/,
                              const convjit_device::storage_t* __restrict__ bias,
                              const convjit_device::storage_t* __restrict__ residual) {
  using namespace convjit_device;
  using namespace convjit_device::conv_pixels;
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
