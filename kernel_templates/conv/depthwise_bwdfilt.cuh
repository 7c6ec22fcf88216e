// Depthwise convolution backward filter (groups = C, any multiplier M =
// K / C), built for bandwidth: dw = alpha * correlate(x, dy) + beta * dw.
// A thread owns one 16-byte vector of filters at one tap and reduces it
// over a slice of the output pixels, P::SPLIT slices in all; consecutive
// threads hold consecutive vectors of the same tap, so at each pixel a
// warp's loads of dy and x run along the channels (16-byte accesses in
// channels-last layouts with M = 1 and whole vectors of channels, element
// by element otherwise).  The slices' partial sums go to the workspace,
// and convjit_kernel_finish adds them in slice order
// (conv/weight_partials.cuh): deterministic, no atomics.
#include "common/taps.cuh"
#include "common/channel_vectors.cuh"
#include "conv/weight_partials.cuh"

namespace convjit_device {
namespace depthwise_bwdfilt {

typedef Problem P;

__device__ __forceinline__ index_t pixel_count() { return P::N * P::OD * P::OH * P::OW; }

// Filters k0 ... at tap (t, r, s), over output pixels [first, last).
__device__ __forceinline__ void reduce(const storage_t* x, const storage_t* dy, index_t k0,
                                       index_t t, index_t r, index_t s, index_t first,
                                       index_t last, bool vectors,
                                       float (&acc)[kChunkElements]) {
  const index_t multiplier = P::K / P::G;
  for (index_t q = first; q < last; ++q) {
    const index_t ow = q % P::OW, oh = q / P::OW % P::OH, od = q / (P::OW * P::OH) % P::OD;
    const index_t n = q / (P::OW * P::OH * P::OD);
    const index_t id = od * P::SD - P::PD + t * P::DD, ih = oh * P::SH - P::PH + r * P::DH,
                  iw = ow * P::SW - P::PW + s * P::DW;
    if (!inside(id, ih, iw, P::D, P::H, P::W)) continue;
    const index_t x_pixel = n * P::XS0 + id * P::XS2 + ih * P::XS3 + iw * P::XS4;
    float dyv[kChunkElements], xv[kChunkElements];
    read_channels(dy, n * P::YS0 + od * P::YS2 + oh * P::YS3 + ow * P::YS4, k0, P::K, P::YS1,
                  vectors, dyv);
    if (vectors) {
      read_channels(x, x_pixel, k0, P::C, P::XS1, true, xv);
    } else {
#pragma unroll
      for (int j = 0; j < kChunkElements; ++j)
        xv[j] = k0 + j < P::K ? load(x[x_pixel + (k0 + j) / multiplier * P::XS1]) : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kChunkElements; ++j) acc[j] += dyv[j] * xv[j];
  }
}

}  // namespace depthwise_bwdfilt
}  // namespace convjit_device

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* __restrict__ dy,
                              convjit_device::storage_t* /*dw*/, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* __restrict__ partial) {
  using namespace convjit_device;
  using namespace convjit_device::depthwise_bwdfilt;
  // Both operands in 16-byte vectors, or both element by element.
  const bool vectors = P::K == P::G && chunked(P::K, P::YS1, P::YS0, P::YS2, P::YS3, P::YS4) &&
                       chunked(P::C, P::XS1, P::XS0, P::XS2, P::XS3, P::XS4) &&
                       chunk_aligned(dy) && chunk_aligned(x);
  const index_t taps = P::T * P::R * P::S, filter_vectors = vector_count(P::K);
  const index_t items = taps * filter_vectors;
  const index_t slice = (pixel_count() + P::SPLIT - 1) / P::SPLIT;
  for (index_t i = thread_index(); i < items * P::SPLIT; i += thread_count()) {
    const index_t item = i % items, part = i / items;
    const index_t k0 = item % filter_vectors * kChunkElements, tap = item / filter_vectors;
    const index_t first = part * slice;
    const index_t last = first + slice < pixel_count() ? first + slice : pixel_count();
    float acc[kChunkElements] = {};
    reduce(x, dy, k0, tap / (P::R * P::S), tap / P::S % P::R, tap % P::S, first, last, vectors,
           acc);
    scratch_t* const sums = partial + part * weight_count();
#pragma unroll
    for (int j = 0; j < kChunkElements; ++j)
      if (k0 + j < P::K) sums[(k0 + j) * taps + tap] = acc[j];
  }
}

CONVJIT_KERNEL convjit_kernel_finish(const convjit_device::storage_t* /*x*/,
                                     const convjit_device::storage_t* /*dy*/,
                                     convjit_device::storage_t* __restrict__ dw, float alpha,
                                     float beta, convjit_device::scratch_t* __restrict__ partial) {
  convjit_device::finish_weight_partials(dw, alpha, beta, partial);
}
