// Resize backward: dx = alpha * resize_bwd(dy) + beta * dx.  One thread per
// dx element gathers the gradients of the outputs that read it (a range
// per axis, resize/resize_axis.cuh), in output order: no atomics, so the
// result is the same on every run.  A linear tap of weight 0 still adds
// its gradient times 0, so that a NaN or infinity propagates as the
// reference's scatter propagates it.
#include "common/epilogue.cuh"
#include "common/grid.cuh"
#include "resize/resize_axis.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* /*unused*/,
                              const convjit_device::storage_t* __restrict__ dy,
                              convjit_device::storage_t* __restrict__ dx, float alpha, float beta,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  const ResizeAxes axes = resize_axes();
  const index_t total = P::N * P::C * P::D * P::H * P::W;
  for (index_t i = thread_index(); i < total; i += thread_count()) {
    const index_t iw = i % P::W, ih = (i / P::W) % P::H, id = (i / (P::W * P::H)) % P::D;
    const index_t c = (i / (P::W * P::H * P::D)) % P::C, n = i / (P::W * P::H * P::D * P::C);
    index_t d0, d1, h0, h1, w0, w1;
    axes.d.outputs_reading(id, d0, d1);
    axes.h.outputs_reading(ih, h0, h1);
    axes.w.outputs_reading(iw, w0, w1);
    const storage_t* plane = dy + n * P::YS0 + c * P::YS1;
    float acc = 0.0f;
    for (index_t od = d0; od < d1; ++od) {
      const float wd = axes.d.weight(od, id);
      for (index_t oh = h0; oh < h1; ++oh) {
        const float wh = axes.h.weight(oh, ih);
        for (index_t ow = w0; ow < w1; ++ow)
          acc += wd * wh * axes.w.weight(ow, iw) *
                 load(plane[od * P::YS2 + oh * P::YS3 + ow * P::YS4]);
      }
    }
    scale_store(dx + n * P::XS0 + c * P::XS1 + id * P::XS2 + ih * P::XS3 + iw * P::XS4, acc, alpha,
                beta);
  }
}
