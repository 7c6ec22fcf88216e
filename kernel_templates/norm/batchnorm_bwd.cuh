// BatchNorm backward: the parameter gradients and dx.
// convjit_kernel_prepare sums g and g xhat over slices of each channel,
// convjit_kernel_finish adds them and writes the parameter gradients asked
// for, and convjit_kernel, launched only when dx is asked for, writes dx.
// Over channel planes (NCHW and its kin): a block per channel and slice in
// the sums, a thread per element of dx; in channel vectors
// (CONVJIT_NORM_VECTORS, norm/batchnorm_bwd_vector.cuh): a block per slice
// of the pixels, and a thread per channel vector and strip of pixels.
// norm/batchnorm_backward.cuh has the pieces.
#include "norm/batchnorm_backward.cuh"

#ifndef CONVJIT_NORM_VECTORS
#define CONVJIT_NORM_VECTORS 0
#endif

CONVJIT_KERNEL convjit_kernel_prepare(const convjit_device::storage_t* __restrict__ x,
                                      const convjit_device::storage_t* __restrict__ dy,
                                      convjit_device::storage_t* /*dx*/, float /*alpha*/,
                                      float /*beta*/, convjit_device::scratch_t* workspace,
                                      const convjit_device::NormParams norm) {
  using namespace convjit_device;
  using namespace convjit_device::batchnorm;
  if constexpr (CONVJIT_NORM_VECTORS)
    sum_vectors([&](index_t c0) { return gradient_vector(x, dy, c0, workspace, norm); }, workspace);
  else
    sum_planes([&](index_t c) { return gradient_plane(x, dy, c, workspace, norm); }, workspace);
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
  if constexpr (CONVJIT_NORM_VECTORS)
    dx_vectors(x, dy, dx, alpha, beta, workspace, norm);
  else
    dx_elements(x, dy, dx, alpha, beta, workspace, norm);
}
