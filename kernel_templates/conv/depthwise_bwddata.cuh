// Depthwise convolution backward data (groups = C, any multiplier M =
// K / C), built for bandwidth: dx = alpha * conv^T(dy, w) + beta * dx.
// Input pixel i receives dy[o] through tap t where o * stride - pad +
// t * dilation = i.  A thread owns one 16-byte vector of channels at
// kDepthwiseStrip consecutive input pixels along W
// (common/channel_vectors.cuh); per tap it loads the vector's weights
// once and applies them to each of its pixels that the tap reaches.  In
// channels-last layouts with M = 1 and C a multiple of the vector, dy
// and dx move as 16-byte accesses; other layouts run the same loops
// element by element.
#include "common/taps.cuh"
#include "conv/depthwise_vectors.cuh"

namespace convjit_device {
namespace depthwise_bwddata {

typedef Problem P;

// The output coordinate from which input coordinate i receives through
// tap t, or -1 where none does (off the stride, or outside the output).
__device__ __forceinline__ index_t source(index_t i, index_t t, index_t pad, index_t stride,
                                          index_t dilation, index_t outputs) {
  const index_t o = i + pad - t * dilation;
  if (o < 0 || o % stride != 0 || o / stride >= outputs) return -1;
  return o / stride;
}

// One item and one of each channel's M filters (m): acc[p][j] for channel
// c0 + j at input pixel w0 + p.
__device__ __forceinline__ void accumulate(const storage_t* dy, const storage_t* w,
                                           const ChannelItem& it, index_t m, bool dy_vector,
                                           float (&acc)[kDepthwiseStrip][kChunkElements]) {
  const index_t multiplier = P::K / P::G;
  const index_t dy_batch = it.n * P::YS0;
  // The tap loops stay rolled: a tap's work is memory-bound, and rolled
  // loops compile in a third of the time (the strip and channels unroll).
#pragma unroll 1
  for (int t = 0; t < P::T; ++t) {
    const index_t od = source(it.d, t, P::PD, P::SD, P::DD, P::OD);
    if (od < 0) continue;
#pragma unroll 1
    for (int r = 0; r < P::R; ++r) {
      const index_t oh = source(it.h, r, P::PH, P::SH, P::DH, P::OH);
      if (oh < 0) continue;
#pragma unroll 1
      for (int s = 0; s < P::S; ++s) {
        float wv[kChunkElements];
        read_taps(w, it.c0 * multiplier + m, multiplier, t * P::WS2 + r * P::WS3 + s * P::WS4,
                  wv);
#pragma unroll
        for (int p = 0; p < kDepthwiseStrip; ++p) {
          const index_t ow = source(it.w0 + p, s, P::PW, P::SW, P::DW, P::OW);
          if (it.w0 + p >= P::W || ow < 0) continue;
          const index_t pixel = dy_batch + od * P::YS2 + oh * P::YS3 + ow * P::YS4;
          float dyv[kChunkElements];
          if (dy_vector) {
            read_channels(dy, pixel, it.c0, P::K, P::YS1, true, dyv);
          } else {
#pragma unroll
            for (int j = 0; j < kChunkElements; ++j)
              dyv[j] = it.c0 + j < P::C ? load(dy[pixel + ((it.c0 + j) * multiplier + m) * P::YS1])
                                        : 0.0f;
          }
#pragma unroll
          for (int j = 0; j < kChunkElements; ++j) acc[p][j] += dyv[j] * wv[j];
        }
      }
    }
  }
}

}  // namespace depthwise_bwddata
}  // namespace convjit_device

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ dy,
                              const convjit_device::storage_t* __restrict__ w,
                              convjit_device::storage_t* __restrict__ dx, float alpha, float beta,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  using namespace convjit_device::depthwise_bwddata;
  const bool dy_vector = P::K == P::G &&
                         chunked(P::K, P::YS1, P::YS0, P::YS2, P::YS3, P::YS4) &&
                         chunk_aligned(dy);
  const bool dx_vector = chunked(P::C, P::XS1, P::XS0, P::XS2, P::XS3, P::XS4) && chunk_aligned(dx);
  const index_t items = channel_items<kDepthwiseStrip>(P::C, P::D, P::H, P::W);
  for (index_t i = thread_index(); i < items; i += thread_count()) {
    const ChannelItem it = channel_item<kDepthwiseStrip>(i, P::C, P::D, P::H, P::W);
    float acc[kDepthwiseStrip][kChunkElements] = {};
    for (index_t m = 0; m < P::K / P::G; ++m) accumulate(dy, w, it, m, dy_vector, acc);
#pragma unroll
    for (int p = 0; p < kDepthwiseStrip; ++p) {
      if (it.w0 + p >= P::W) continue;
      const index_t pixel = it.n * P::XS0 + it.d * P::XS2 + it.h * P::XS3 + (it.w0 + p) * P::XS4;
      write_channels(dx, pixel, it.c0, P::C, P::XS1, dx_vector, acc[p], alpha, beta);
    }
  }
}
