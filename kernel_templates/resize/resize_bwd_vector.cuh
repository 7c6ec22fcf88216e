// Resize backward in 16-byte channel vectors (common/channel_vectors.cuh),
// for channels-last layouts: a thread per dx pixel and vector of channels
// gathers, in output order, the gradients of the outputs that read it.
// The same arithmetic as resize/resize_bwd.cuh, per channel.
#include "common/channel_vectors.cuh"
#include "resize/resize_axis.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* /*unused*/,
                              const convjit_device::storage_t* __restrict__ dy,
                              convjit_device::storage_t* __restrict__ dx, float alpha, float beta,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  const bool dy_vector = chunked(P::C, P::YS1, P::YS0, P::YS2, P::YS3, P::YS4) && chunk_aligned(dy);
  const bool dx_vector = chunked(P::C, P::XS1, P::XS0, P::XS2, P::XS3, P::XS4) && chunk_aligned(dx);
  const ResizeAxes axes = resize_axes();
  const index_t items = channel_items<1>(P::C, P::D, P::H, P::W);
  for (index_t i = thread_index(); i < items; i += thread_count()) {
    const ChannelItem it = channel_item<1>(i, P::C, P::D, P::H, P::W);
    index_t d0, d1, h0, h1, w0, w1;
    axes.d.outputs_reading(it.d, d0, d1);
    axes.h.outputs_reading(it.h, h0, h1);
    axes.w.outputs_reading(it.w0, w0, w1);
    float acc[kChunkElements] = {};
    for (index_t od = d0; od < d1; ++od) {
      const float wd = axes.d.weight(od, it.d);
      for (index_t oh = h0; oh < h1; ++oh) {
        const float wh = axes.h.weight(oh, it.h);
        for (index_t ow = w0; ow < w1; ++ow) {
          const float weight = wd * wh * axes.w.weight(ow, it.w0);
          float g[kChunkElements];
          read_channels(dy, it.n * P::YS0 + od * P::YS2 + oh * P::YS3 + ow * P::YS4, it.c0, P::C,
                        P::YS1, dy_vector, g);
#pragma unroll
          for (int j = 0; j < kChunkElements; ++j) acc[j] += weight * g[j];
        }
      }
    }
    const index_t pixel = it.n * P::XS0 + it.d * P::XS2 + it.h * P::XS3 + it.w0 * P::XS4;
    write_channels(dx, pixel, it.c0, P::C, P::XS1, dx_vector, acc, alpha, beta);
  }
}
