// A fused conv fwd's epilogue as a pass of its own, for a backend that
// computes only the plain conv (cuDNN): y = act(alpha * conv + bias
// [+ residual]) + beta * y, where `conv` holds the plain conv(x, w) in y's
// layout.  conv may be y itself when beta is 0 (each element is read
// before it is written, by the same thread), so neither is __restrict__.
// A thread per element, in memory order: channels fastest where they are
// contiguous (channels-last), else pixels, so a warp's accesses coalesce.
#include "common/fused_epilogue.cuh"
#include "common/grid.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* conv,
                              const convjit_device::storage_t* /*unused*/,
                              convjit_device::storage_t* y, float alpha, float beta,
                              convjit_device::scratch_t* /*workspace*/,
                              const convjit_device::storage_t* __restrict__ bias,
                              const convjit_device::storage_t* __restrict__ residual) {
  using namespace convjit_device;
  typedef Problem P;
  const FusedEpilogue<P> epilogue{alpha, beta, bias, residual};
  const index_t pixels = P::OD * P::OH * P::OW, total = P::N * P::K * pixels;
  const bool channels_last = P::YS1 == 1;
  for (index_t i = thread_index(); i < total; i += thread_count()) {
    const index_t k = channels_last ? i % P::K : i / pixels % P::K;
    const index_t pixel = channels_last ? i / P::K % pixels : i % pixels;
    const index_t n = i / (P::K * pixels);
    const index_t at = n * P::YS0 + k * P::YS1 + pixel / (P::OH * P::OW) * P::YS2 +
                       pixel / P::OW % P::OH * P::YS3 + pixel % P::OW * P::YS4;
    epilogue.write(y, at, k, load(conv[at]));
  }
}
