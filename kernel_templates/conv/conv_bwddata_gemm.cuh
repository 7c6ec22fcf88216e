// Convolution backward data as an implicit GEMM, one GEMM per stride
// phase.  Input pixel id receives dy[od] through tap t exactly when
// id + PD - t DD = od SD, so the inputs of one phase (id mod SD, ih mod SH,
// iw mod SW) all receive through the same taps, and each phase is a GEMM
// over just those: no work on the zeros a strided transposed conv would
// multiply.  Per group g and phase:
//   dx[m, n] = sum_k A[m, k] B[n, k]
//   m = (batch, i, j, l), the phase's inputs   M = N |D_p| |H_p| |W_p|
//   n = channel c within g                     N = CG
//   k = (phase tap, filter f), filter fastest  K = |taps_p| K / G
// A[m, k] = dy[batch, g K/G + f, od, oh, ow] (zero off the output),
// B[n, k] = w[g K/G + f, c, t, r, s].  Filter-fastest k makes a chunk of A
// one 16-byte load in channels-last dy with K/G a multiple of the chunk,
// and of B one in w's copy in [G][CG][T R S][K/G] order (PACKED,
// conv/packed_filters.cuh): no common filter layout runs along K/G.
//
// With unit strides there is one phase and every expression below folds
// to the forward template's form.
#include "common/taps.cuh"
#include "conv/packed_filters.cuh"
#include "gemm/mainloop.cuh"
#include "gemm/simt_mma.cuh"
#include "gemm/tile_epilogue.cuh"
#include "gemm/warp_mma.cuh"

namespace convjit_device {
namespace conv_bwddata {

typedef Problem P;

__device__ __forceinline__ index_t filters_per_group() { return P::K / P::G; }

__device__ __forceinline__ index_t gcd(index_t a, index_t b) {
  while (b != 0) {
    const index_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// The taps of one spatial dimension that reach the inputs of one phase:
// t = first + j step for j < count; the phase's i-th input receives tap j
// from output i + shift - j dq.  The solutions of t DD = phase + pad
// (mod stride) repeat every stride / gcd(stride, DD) taps.
struct PhaseTaps {
  index_t count, first, step, shift, dq;
};
__device__ __forceinline__ PhaseTaps phase_taps(index_t phase, index_t taps, index_t pad,
                                                index_t stride, index_t dilation) {
  const index_t step = stride / gcd(stride, dilation);
  index_t first = 0;
  while (first < step && (phase + pad - first * dilation) % stride != 0) ++first;
  if (first == step || first >= taps) return {0, 0, step, 0, 0};
  return {(taps - 1 - first) / step + 1, first, step, (phase + pad - first * dilation) / stride,
          step * dilation / stride};
}

// The inputs first, first + stride, ... below `extent`.
__device__ __forceinline__ index_t phase_extent(index_t extent, index_t first, index_t stride) {
  return first < extent ? (extent - first + stride - 1) / stride : 0;
}

struct Phase {
  PhaseTaps t, r, s;
  index_t pd, ph, pw;  // the first input of each dimension
  index_t rows_d, rows_h, rows_w;

  __device__ __forceinline__ index_t rows() const { return P::N * rows_d * rows_h * rows_w; }
  __device__ __forceinline__ index_t reduction() const {
    return t.count * r.count * s.count * filters_per_group();
  }
};
__device__ __forceinline__ Phase phase(index_t p) {
  const index_t pw = p % P::SW, ph = p / P::SW % P::SH, pd = p / (P::SW * P::SH);
  return {phase_taps(pd, P::T, P::PD, P::SD, P::DD),
          phase_taps(ph, P::R, P::PH, P::SH, P::DH),
          phase_taps(pw, P::S, P::PW, P::SW, P::DW),
          pd,
          ph,
          pw,
          phase_extent(P::D, pd, P::SD),
          phase_extent(P::H, ph, P::SH),
          phase_extent(P::W, pw, P::SW)};
}
// Phase 0 has the most inputs: every phase's rows fit its tiles.
__device__ __forceinline__ index_t widest_rows() {
  return P::N * phase_extent(P::D, 0, P::SD) * phase_extent(P::H, 0, P::SH) *
         phase_extent(P::W, 0, P::SW);
}

// GEMM row m of a phase: (batch, i, j, l).
struct Pixel {
  index_t n, i, j, l;
};
__device__ __forceinline__ Pixel pixel(const Phase& ph, index_t m) {
  return {m / (ph.rows_w * ph.rows_h * ph.rows_d), m / (ph.rows_w * ph.rows_h) % ph.rows_d,
          m / ph.rows_w % ph.rows_h, m % ph.rows_w};
}

// GEMM column k of a phase: filter f and the tap's index in each dimension.
struct Column {
  index_t f, jt, jr, js;
};
__device__ __forceinline__ Column column(const Phase& ph, index_t k) {
  const index_t tap = k / filters_per_group();
  return {k % filters_per_group(), tap / (ph.s.count * ph.r.count), tap / ph.s.count % ph.r.count,
          tap % ph.s.count};
}

// A: rows are the phase's input pixels, read through dy.
struct Gradients {
  static constexpr bool kMnMajor = false;
  struct Row {
    index_t base;  // batch and group offset in dy; -1 past the phase's last pixel
    index_t i, j, l;
  };
  const storage_t* base;
  bool vector;
  index_t group;
  const Phase& ph;

  __device__ __forceinline__ Row row(index_t m) const {
    if (m >= ph.rows()) return {-1, 0, 0, 0};
    const Pixel p = pixel(ph, m);
    return {p.n * P::YS0 + group * filters_per_group() * P::YS1, p.i, p.j, p.l};
  }
  __device__ __forceinline__ index_t offset(const Row& row, index_t k) const {
    if (row.base < 0 || k >= ph.reduction()) return -1;
    const Column col = column(ph, k);
    const index_t od = row.i + ph.t.shift - col.jt * ph.t.dq;
    const index_t oh = row.j + ph.r.shift - col.jr * ph.r.dq;
    const index_t ow = row.l + ph.s.shift - col.js * ph.s.dq;
    if (!inside(od, oh, ow, P::OD, P::OH, P::OW)) return -1;
    return row.base + col.f * P::YS1 + od * P::YS2 + oh * P::YS3 + ow * P::YS4;
  }
};

// B: rows are the group's channels, read through w or, PACKED, through
// its copy, where a channel's row holds K/G filters per tap.
struct Filters {
  static constexpr bool kMnMajor = false;
  struct Row {
    index_t base;  // -1 past the group's last channel
  };
  const storage_t* base;
  bool vector;
  index_t group;
  const Phase& ph;

  __device__ __forceinline__ Row row(index_t c) const {
    if (c >= P::CG) return {-1};
    if (P::PACKED) return {(group * P::CG + c) * P::T * P::R * P::S * filters_per_group()};
    return {group * filters_per_group() * P::WS0 + c * P::WS1};
  }
  __device__ __forceinline__ index_t offset(const Row& row, index_t k) const {
    if (row.base < 0 || k >= ph.reduction()) return -1;
    const Column col = column(ph, k);
    const index_t t = ph.t.first + col.jt * ph.t.step, r = ph.r.first + col.jr * ph.r.step,
                  s = ph.s.first + col.js * ph.s.step;
    if (P::PACKED) return row.base + ((t * P::R + r) * P::S + s) * filters_per_group() + col.f;
    return row.base + col.f * P::WS0 + t * P::WS2 + r * P::WS3 + s * P::WS4;
  }
};

// Where B reads: w, or its packed copy in the workspace.
__device__ __forceinline__ Filters filters(const storage_t* w, scratch_t* workspace,
                                           index_t group, const Phase& ph) {
  const index_t kg = filters_per_group();
  if (P::PACKED) {
    const storage_t* packed = workspace_storage(workspace);
    return {packed, kg % kChunkElements == 0 && chunk_aligned(packed), group, ph};
  }
  const bool w_chunked = chunked(kg, P::WS0, P::WS1, P::WS2, P::WS3, P::WS4);
  return {w, w_chunked && chunk_aligned(w), group, ph};
}

// The output tile, in dx.
struct Inputs {
  storage_t* base;
  bool columns_contiguous;
  index_t group;
  const Phase& ph;

  __device__ __forceinline__ index_t row(index_t m) const {
    if (m >= ph.rows()) return -1;
    const Pixel p = pixel(ph, m);
    return p.n * P::XS0 + (ph.pd + p.i * P::SD) * P::XS2 + (ph.ph + p.j * P::SH) * P::XS3 +
           (ph.pw + p.l * P::SW) * P::XS4;
  }
  __device__ __forceinline__ index_t column(index_t c) const {
    return c < P::CG ? (group * P::CG + c) * P::XS1 : -1;
  }
};

}  // namespace conv_bwddata

// Blocks run tile_m fastest, then tile_n, phase and group; a phase with
// fewer inputs than the widest leaves its last blocks idle.
template <class Math>
__device__ __forceinline__ void convjit_gemm_kernel(const storage_t* __restrict__ dy,
                                                    const storage_t* __restrict__ w,
                                                    storage_t* __restrict__ dx, float alpha,
                                                    float beta, scratch_t* workspace) {
  using namespace conv_bwddata;
  typedef typename Math::Tile Tile;
  CONVJIT_SHARED_ARRAY(unsigned, smem, Tile::kSharedWords);
  const index_t tiles_m = (widest_rows() + Tile::BM - 1) / Tile::BM;
  const index_t tiles_n = (P::CG + Tile::BN - 1) / Tile::BN;
  const index_t phases = P::SD * P::SH * P::SW;
  const index_t block = blockIdx.x;
  const index_t tile_m = block % tiles_m, tile_n = block / tiles_m % tiles_n;
  const index_t group = block / (tiles_m * tiles_n * phases);
  const Phase ph = phase(block / (tiles_m * tiles_n) % phases);
  if (tile_m * Tile::BM >= ph.rows()) return;  // the whole block: no barrier is left waiting
  const index_t kg = filters_per_group();
  const bool dy_chunked = chunked(kg, P::YS1, P::YS0, P::YS2, P::YS3, P::YS4);
  const Gradients a{dy, dy_chunked && chunk_aligned(dy), group, ph};
  const Filters b = filters(w, workspace, group, ph);
  Math math;
  gemm_mainloop(smem, math, a, b, tile_m * Tile::BM, tile_n * Tile::BN, 0, ph.reduction());
  const Inputs out{dx, P::XS1 == 1, group, ph};
  store_tile(smem, math, out, tile_m * Tile::BM, tile_n * Tile::BN, alpha, beta);
}

// The first pass where the host asks for it: w copied in B's k order.
template <class Math>
__device__ __forceinline__ void convjit_gemm_prepare(const storage_t* /*dy*/,
                                                     const storage_t* __restrict__ w,
                                                     storage_t* /*dx*/, float /*alpha*/,
                                                     float /*beta*/, scratch_t* workspace) {
  pack_filters<BackwardDataFilterOrder>(w, workspace_storage(workspace));
}

}  // namespace convjit_device

#if defined(CONVJIT_GEMM)
CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ dy,
                              const convjit_device::storage_t* __restrict__ w,
                              convjit_device::storage_t* __restrict__ dx, float alpha, float beta,
                              convjit_device::scratch_t* workspace) {
  convjit_device::convjit_gemm_kernel<CONVJIT_GEMM>(dy, w, dx, alpha, beta, workspace);
}
CONVJIT_KERNEL convjit_kernel_prepare(const convjit_device::storage_t* __restrict__ dy,
                                      const convjit_device::storage_t* __restrict__ w,
                                      convjit_device::storage_t* __restrict__ dx, float alpha,
                                      float beta, convjit_device::scratch_t* workspace) {
  convjit_device::convjit_gemm_prepare<CONVJIT_GEMM>(dy, w, dx, alpha, beta, workspace);
}
#endif
