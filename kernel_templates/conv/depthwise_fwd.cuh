// Depthwise convolution forward (groups = C, any multiplier M = K / C),
// built for bandwidth: y = act(alpha * conv(x, w) + bias [+ residual]) + beta * y.  A thread owns
// one 16-byte vector of filters at kDepthwiseStrip consecutive output
// pixels along OW (common/channel_vectors.cuh).  Per tap it loads the
// vector's weights once, into registers, and applies them to each of its
// pixels; in channels-last layouts with M = 1 and C a multiple of the
// vector, x and y move as 16-byte accesses that coalesce across the
// warp's channels.  Other layouts run the same loops element by element.
#include "common/fused_epilogue.cuh"
#include "common/taps.cuh"
#include "conv/depthwise_vectors.cuh"

namespace convjit_device {
namespace depthwise_fwd {

typedef Problem P;

// One item: acc[p][j] for filter k0 + j at output pixel ow0 + p.
__device__ __forceinline__ void accumulate(const storage_t* x, const storage_t* w,
                                           const ChannelItem& it, bool x_vector,
                                           float (&acc)[kDepthwiseStrip][kChunkElements]) {
  const index_t multiplier = P::K / P::G;
  const index_t x_batch = it.n * P::XS0;
  // The tap loops stay rolled: a tap's work is memory-bound, and rolled
  // loops compile in a third of the time (the strip and channels unroll).
#pragma unroll 1
  for (int t = 0; t < P::T; ++t) {
    const index_t id = it.d * P::SD - P::PD + t * P::DD;
    if (id < 0 || id >= P::D) continue;
#pragma unroll 1
    for (int r = 0; r < P::R; ++r) {
      const index_t ih = it.h * P::SH - P::PH + r * P::DH;
      if (ih < 0 || ih >= P::H) continue;
#pragma unroll 1
      for (int s = 0; s < P::S; ++s) {
        float wv[kChunkElements];
        read_taps(w, it.c0, 1, t * P::WS2 + r * P::WS3 + s * P::WS4, wv);
#pragma unroll
        for (int p = 0; p < kDepthwiseStrip; ++p) {
          const index_t iw = (it.w0 + p) * P::SW - P::PW + s * P::DW;
          if (it.w0 + p >= P::OW || iw < 0 || iw >= P::W) continue;
          const index_t pixel = x_batch + id * P::XS2 + ih * P::XS3 + iw * P::XS4;
          float xv[kChunkElements];
          if (x_vector) {
            read_channels(x, pixel, it.c0, P::C, P::XS1, true, xv);
          } else {
#pragma unroll
            for (int j = 0; j < kChunkElements; ++j)
              xv[j] = it.c0 + j < P::K ? load(x[pixel + (it.c0 + j) / multiplier * P::XS1]) : 0.0f;
          }
#pragma unroll
          for (int j = 0; j < kChunkElements; ++j) acc[p][j] += xv[j] * wv[j];
        }
      }
    }
  }
}

}  // namespace depthwise_fwd
}  // namespace convjit_device

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* __restrict__ w,
                              convjit_device::storage_t* __restrict__ y, float alpha, float beta,
                              convjit_device::scratch_t* /*workspace*/,
                              const convjit_device::storage_t* __restrict__ bias,
                              const convjit_device::storage_t* __restrict__ residual) {
  using namespace convjit_device;
  using namespace convjit_device::depthwise_fwd;
  const FusedEpilogue<P> epilogue{alpha, beta, bias, residual};
  const bool x_vector = P::K == P::G && chunked(P::C, P::XS1, P::XS0, P::XS2, P::XS3, P::XS4) &&
                        chunk_aligned(x);
  const bool y_vector = chunked(P::K, P::YS1, P::YS0, P::YS2, P::YS3, P::YS4) && chunk_aligned(y);
  const index_t items = channel_items<kDepthwiseStrip>(P::K, P::OD, P::OH, P::OW);
  for (index_t i = thread_index(); i < items; i += thread_count()) {
    const ChannelItem it = channel_item<kDepthwiseStrip>(i, P::K, P::OD, P::OH, P::OW);
    float acc[kDepthwiseStrip][kChunkElements] = {};
    accumulate(x, w, it, x_vector, acc);
#pragma unroll
    for (int p = 0; p < kDepthwiseStrip; ++p) {
      if (it.w0 + p >= P::OW) continue;
      const index_t pixel =
          it.n * P::YS0 + it.d * P::YS2 + it.h * P::YS3 + (it.w0 + p) * P::YS4;
      epilogue.apply(acc[p], pixel, it.c0, P::K, P::YS1, y_vector);
      write_channels(y, pixel, it.c0, P::K, P::YS1, y_vector, acc[p], 1.0f, beta);
    }
  }
}
