// Pooling backward: dx = alpha * pool_bwd(x, dy) + beta * dx.  One thread
// per dx element gathers from every window that contains it; max pooling
// recomputes each window's argmax instead of reading an index tensor.
#include "common/epilogue.cuh"
#include "common/grid.cuh"
#include "pool/pool_common.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                                          const convjit_device::storage_t* __restrict__ dy,
                                          convjit_device::storage_t* __restrict__ dx, float alpha,
                                          float beta, convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  const index_t total = P::N * P::C * P::D * P::H * P::W;
  for (index_t i = thread_index(); i < total; i += thread_count()) {
    const index_t iw = i % P::W, ih = (i / P::W) % P::H, id = (i / (P::W * P::H)) % P::D;
    const index_t c = (i / (P::W * P::H * P::D)) % P::C, n = i / (P::W * P::H * P::D * P::C);
    const storage_t* plane = x + n * P::XS0 + c * P::XS1;
    float acc = 0.0f;
    for (int t = 0; t < P::T; ++t) {
      const index_t pd = id + P::PD - t * P::DD;
      if (pd < 0 || pd % P::SD != 0 || pd / P::SD >= P::OD) continue;
      for (int r = 0; r < P::R; ++r) {
        const index_t ph = ih + P::PH - r * P::DH;
        if (ph < 0 || ph % P::SH != 0 || ph / P::SH >= P::OH) continue;
        for (int s = 0; s < P::S; ++s) {
          const index_t pw = iw + P::PW - s * P::DW;
          if (pw < 0 || pw % P::SW != 0 || pw / P::SW >= P::OW) continue;
          const index_t od = pd / P::SD, oh = ph / P::SH, ow = pw / P::SW;
          const float grad =
              load(dy[n * P::YS0 + c * P::YS1 + od * P::YS2 + oh * P::YS3 + ow * P::YS4]);
          const Window win = window_at(od, oh, ow);
          if (P::MODE == 1) {
            const ArgMax best = argmax(plane, win);
            if (best.found && best.d == id && best.h == ih && best.w == iw) acc += grad;
          } else {
            acc += grad / divisor(win);
          }
        }
      }
    }
    scale_store(dx + n * P::XS0 + c * P::XS1 + id * P::XS2 + ih * P::XS3 + iw * P::XS4, acc, alpha,
                beta);
  }
}
