// Pooling backward in 16-byte channel vectors (common/channel_vectors.cuh),
// for channels-last layouts: dx = alpha * pool_bwd(x, dy) + beta * dx, a
// thread per input pixel and vector of channels gathering from every
// window that holds the pixel, in the order pool/pool_bwd.cuh adds them.
// Max pooling recomputes each window's winner per channel (the first NaN
// in window order, else the first maximum): no index tensor, no atomics.
#include "common/channel_vectors.cuh"
#include "pool/pool_common.cuh"

namespace convjit_device {
namespace pool_bwd_vector {

// Per channel, whether the input pixel at (id, ih, iw) wins the window.
__device__ __forceinline__ void winners(const storage_t* x, index_t n, index_t c0, bool vector,
                                        const Window& win, index_t id, index_t ih, index_t iw,
                                        bool (&mine)[kChunkElements]) {
  float best[kChunkElements];
  bool found[kChunkElements];
#pragma unroll
  for (int j = 0; j < kChunkElements; ++j) mine[j] = found[j] = false, best[j] = 0.0f;
  for (int t = win.d.begin; t < win.d.end; ++t)
    for (int r = win.h.begin; r < win.h.end; ++r)
      for (int s = win.w.begin; s < win.w.end; ++s) {
        const index_t d = win.sd + t * P::DD, h = win.sh + r * P::DH, w = win.sw + s * P::DW;
        float xv[kChunkElements];
        read_channels(x, n * P::XS0 + d * P::XS2 + h * P::XS3 + w * P::XS4, c0, P::C, P::XS1,
                      vector, xv);
#pragma unroll
        for (int j = 0; j < kChunkElements; ++j) {
          if (found[j] && best[j] != best[j]) continue;  // a NaN already won
          if (!found[j] || xv[j] > best[j] || xv[j] != xv[j]) {
            found[j] = true, best[j] = xv[j];
            mine[j] = d == id && h == ih && w == iw;
          }
        }
      }
}

}  // namespace pool_bwd_vector
}  // namespace convjit_device

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* __restrict__ dy,
                              convjit_device::storage_t* __restrict__ dx, float alpha, float beta,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  using namespace convjit_device::pool_bwd_vector;
  const bool x_vector = chunked(P::C, P::XS1, P::XS0, P::XS2, P::XS3, P::XS4) &&
                        chunk_aligned(x) && chunk_aligned(dx);
  const bool dy_vector = chunked(P::C, P::YS1, P::YS0, P::YS2, P::YS3, P::YS4) && chunk_aligned(dy);
  const index_t items = channel_items<1>(P::C, P::D, P::H, P::W);
  for (index_t i = thread_index(); i < items; i += thread_count()) {
    const ChannelItem it = channel_item<1>(i, P::C, P::D, P::H, P::W);
    float acc[kChunkElements] = {};
    for (int t = 0; t < P::T; ++t) {
      const index_t pd = it.d + P::PD - t * P::DD;
      if (pd < 0 || pd % P::SD != 0 || pd / P::SD >= P::OD) continue;
      for (int r = 0; r < P::R; ++r) {
        const index_t ph = it.h + P::PH - r * P::DH;
        if (ph < 0 || ph % P::SH != 0 || ph / P::SH >= P::OH) continue;
        for (int s = 0; s < P::S; ++s) {
          const index_t pw = it.w0 + P::PW - s * P::DW;
          if (pw < 0 || pw % P::SW != 0 || pw / P::SW >= P::OW) continue;
          const index_t od = pd / P::SD, oh = ph / P::SH, ow = pw / P::SW;
          float grad[kChunkElements];
          read_channels(dy, it.n * P::YS0 + od * P::YS2 + oh * P::YS3 + ow * P::YS4, it.c0, P::C,
                        P::YS1, dy_vector, grad);
          const Window win = window_at(od, oh, ow);
          if (P::MODE == 1) {
            bool mine[kChunkElements];
            winners(x, it.n, it.c0, x_vector, win, it.d, it.h, it.w0, mine);
#pragma unroll
            for (int j = 0; j < kChunkElements; ++j)
              if (mine[j]) acc[j] += grad[j];
          } else {
            const float d = divisor(win);
#pragma unroll
            for (int j = 0; j < kChunkElements; ++j) acc[j] += grad[j] / d;
          }
        }
      }
    }
    const index_t pixel = it.n * P::XS0 + it.d * P::XS2 + it.h * P::XS3 + it.w0 * P::XS4;
    write_channels(dx, pixel, it.c0, P::C, P::XS1, x_vector, acc, alpha, beta);
  }
}
