// BatchNorm backward: parameter gradients and dx, a block per channel and
// slice of its pixels in the sums' first level, a thread per element of dx:
// for layouts whose channels are planes.  convjit_kernel_prepare sums g and
// g xhat over the slices, convjit_kernel_finish adds them and writes the
// parameter gradients asked for, and convjit_kernel, launched only when dx
// is asked for, writes dx.  norm/batchnorm_backward.cuh has the pieces.
#include "norm/batchnorm_backward.cuh"

CONVJIT_KERNEL convjit_kernel_prepare(const convjit_device::storage_t* __restrict__ x,
                                      const convjit_device::storage_t* __restrict__ dy,
                                      convjit_device::storage_t* /*dx*/, float /*alpha*/,
                                      float /*beta*/, convjit_device::scratch_t* workspace,
                                      const convjit_device::NormParams norm) {
  using namespace convjit_device;
  using namespace convjit_device::batchnorm;
  sum_planes(
      [&](index_t c) {
        return GradientPlane{x, dy, c, channel_stats(c, workspace, norm, false)};
      },
      workspace);
}

CONVJIT_KERNEL convjit_kernel_finish(const convjit_device::storage_t* /*x*/,
                                     const convjit_device::storage_t* /*dy*/,
                                     convjit_device::storage_t* /*dx*/, float /*alpha*/,
                                     float /*beta*/, convjit_device::scratch_t* workspace,
                                     const convjit_device::NormParams norm) {
  using namespace convjit_device;
  using namespace convjit_device::batchnorm;
  finish_gradients(workspace, norm);
}

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* __restrict__ dy,
                              convjit_device::storage_t* __restrict__ dx, float alpha, float beta,
                              convjit_device::scratch_t* workspace,
                              const convjit_device::NormParams norm) {
  using namespace convjit_device;
  using namespace convjit_device::batchnorm;
  dx_elements(x, dy, dx, alpha, beta, workspace, norm);
}
