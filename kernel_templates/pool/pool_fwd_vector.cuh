// Pooling forward in 16-byte channel vectors (common/channel_vectors.cuh),
// for channels-last layouts: y = alpha * pool(x) + beta * y, a thread per
// output pixel and vector of channels, so that a warp's loads of each
// window tap run along the channels.  The same arithmetic as
// pool/pool_fwd.cuh, per channel: max takes the first NaN in window order,
// else the maximum; the averages divide the window's sum once.
#include "common/channel_vectors.cuh"
#include "pool/pool_common.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* /*unused*/,
                              convjit_device::storage_t* __restrict__ y, float alpha, float beta,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  const bool x_vector = chunked(P::C, P::XS1, P::XS0, P::XS2, P::XS3, P::XS4) && chunk_aligned(x);
  const bool y_vector = chunked(P::C, P::YS1, P::YS0, P::YS2, P::YS3, P::YS4) && chunk_aligned(y);
  const index_t items = channel_items<1>(P::C, P::OD, P::OH, P::OW);
  for (index_t i = thread_index(); i < items; i += thread_count()) {
    const ChannelItem it = channel_item<1>(i, P::C, P::OD, P::OH, P::OW);
    const Window win = window_at(it.d, it.h, it.w0);
    float v[kChunkElements];
#pragma unroll
    for (int j = 0; j < kChunkElements; ++j) v[j] = P::MODE == 1 ? -__int_as_float(0x7f800000) : 0;
    for (int t = win.d.begin; t < win.d.end; ++t)
      for (int r = win.h.begin; r < win.h.end; ++r)
        for (int s = win.w.begin; s < win.w.end; ++s) {
          const index_t pixel = it.n * P::XS0 + (win.sd + t * P::DD) * P::XS2 +
                                (win.sh + r * P::DH) * P::XS3 + (win.sw + s * P::DW) * P::XS4;
          float xv[kChunkElements];
          read_channels(x, pixel, it.c0, P::C, P::XS1, x_vector, xv);
#pragma unroll
          for (int j = 0; j < kChunkElements; ++j) {
            if (P::MODE != 1)
              v[j] += xv[j];
            else if (v[j] == v[j] && (xv[j] > v[j] || xv[j] != xv[j]))  // a NaN stays
              v[j] = xv[j];
          }
        }
    if (P::MODE != 1) {
      const float d = divisor(win);
#pragma unroll
      for (int j = 0; j < kChunkElements; ++j) v[j] /= d;
    }
    const index_t pixel = it.n * P::YS0 + it.d * P::YS2 + it.h * P::YS3 + it.w0 * P::YS4;
    write_channels(y, pixel, it.c0, P::C, P::YS1, y_vector, v, alpha, beta);
  }
}
