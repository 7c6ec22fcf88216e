// Pooling forward: y = alpha * pool(x) + beta * y, one thread per output.
#include "common/epilogue.cuh"
#include "common/grid.cuh"
#include "pool/pool_common.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                                          const convjit_device::storage_t* /*unused*/,
                                          convjit_device::storage_t* __restrict__ y, float alpha,
                                          float beta, convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  const index_t total = P::N * P::C * P::OD * P::OH * P::OW;
  for (index_t i = thread_index(); i < total; i += thread_count()) {
    const index_t ow = i % P::OW, oh = (i / P::OW) % P::OH, od = (i / (P::OW * P::OH)) % P::OD;
    const index_t c = (i / (P::OW * P::OH * P::OD)) % P::C, n = i / (P::OW * P::OH * P::OD * P::C);
    const storage_t* plane = x + n * P::XS0 + c * P::XS1;
    const Window win = window_at(od, oh, ow);
    const float value = pooled(win, PlaneReader{plane});
    scale_store(y + n * P::YS0 + c * P::YS1 + od * P::YS2 + oh * P::YS3 + ow * P::YS4, value, alpha,
                beta);
  }
}
