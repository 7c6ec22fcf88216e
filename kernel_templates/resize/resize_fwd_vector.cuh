// Resize forward in 16-byte channel vectors (common/channel_vectors.cuh),
// for channels-last layouts: a thread per output pixel and vector of
// channels, which computes the pixel's taps once for all its channels.
// The same arithmetic as resize/resize_fwd.cuh, per channel.
#include "common/channel_vectors.cuh"
#include "resize/resize_axis.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* /*unused*/,
                              convjit_device::storage_t* __restrict__ y, float alpha, float beta,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  const bool x_vector = chunked(P::C, P::XS1, P::XS0, P::XS2, P::XS3, P::XS4) && chunk_aligned(x);
  const bool y_vector = chunked(P::C, P::YS1, P::YS0, P::YS2, P::YS3, P::YS4) && chunk_aligned(y);
  const ResizeAxes axes = resize_axes();
  const index_t items = channel_items<1>(P::C, P::OD, P::OH, P::OW);
  for (index_t i = thread_index(); i < items; i += thread_count()) {
    const ChannelItem it = channel_item<1>(i, P::C, P::OD, P::OH, P::OW);
    const ResizeTap td = axes.d.tap(it.d), th = axes.h.tap(it.h), tw = axes.w.tap(it.w0);
    float sum[kChunkElements] = {};
    for (int a = 0; a < axes.d.taps; ++a)
      for (int b = 0; b < axes.h.taps; ++b)
        for (int e = 0; e < axes.w.taps; ++e) {
          const float weight = tap_weight(td, a) * tap_weight(th, b) * tap_weight(tw, e);
          const index_t pixel = it.n * P::XS0 + tap_index(td, a) * P::XS2 +
                                tap_index(th, b) * P::XS3 + tap_index(tw, e) * P::XS4;
          float xv[kChunkElements];
          read_channels(x, pixel, it.c0, P::C, P::XS1, x_vector, xv);
#pragma unroll
          for (int j = 0; j < kChunkElements; ++j) sum[j] += weight * xv[j];
        }
    const index_t pixel = it.n * P::YS0 + it.d * P::YS2 + it.h * P::YS3 + it.w0 * P::YS4;
    write_channels(y, pixel, it.c0, P::C, P::YS1, y_vector, sum, alpha, beta);
  }
}
