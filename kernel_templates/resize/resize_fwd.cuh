// Resize forward: y = alpha * resize(x) + beta * y, one thread per output,
// which blends its taps (resize/resize_axis.cuh) in the reference's order.
#include "common/epilogue.cuh"
#include "common/grid.cuh"
#include "resize/resize_axis.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* /*unused*/,
                              convjit_device::storage_t* __restrict__ y, float alpha, float beta,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  const ResizeAxes axes = resize_axes();
  const index_t total = P::N * P::C * P::OD * P::OH * P::OW;
  for (index_t i = thread_index(); i < total; i += thread_count()) {
    const index_t ow = i % P::OW, oh = (i / P::OW) % P::OH, od = (i / (P::OW * P::OH)) % P::OD;
    const index_t c = (i / (P::OW * P::OH * P::OD)) % P::C, n = i / (P::OW * P::OH * P::OD * P::C);
    const ResizeTap td = axes.d.tap(od), th = axes.h.tap(oh), tw = axes.w.tap(ow);
    const storage_t* plane = x + n * P::XS0 + c * P::XS1;
    float sum = 0.0f;
    for (int a = 0; a < axes.d.taps; ++a)
      for (int b = 0; b < axes.h.taps; ++b)
        for (int e = 0; e < axes.w.taps; ++e) {
          const float weight = tap_weight(td, a) * tap_weight(th, b) * tap_weight(tw, e);
          sum += weight * load(plane[tap_index(td, a) * P::XS2 + tap_index(th, b) * P::XS3 +
                                     tap_index(tw, e) * P::XS4]);
        }
    scale_store(y + n * P::YS0 + c * P::YS1 + od * P::YS2 + oh * P::YS3 + ow * P::YS4, sum, alpha,
                beta);
  }
}
