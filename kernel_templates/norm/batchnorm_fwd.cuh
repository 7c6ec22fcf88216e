// BatchNorm forward: y = alpha * act((x - mean) * invstd * scale + shift)
// + beta * y.  Training runs convjit_kernel_prepare (the sums of slices of
// each channel), convjit_kernel_finish (each channel's mean and invstd,
// saved, and the running update) and convjit_kernel (the normalisation);
// inference convjit_kernel alone, on the running statistics.  Over
// channel planes (NCHW and its kin): a block per channel and slice in the
// sums, a thread per element in the normalisation; in channel vectors
// (CONVJIT_NORM_VECTORS, norm/batchnorm_fwd_vector.cuh): a block per slice
// of the pixels, and a thread per channel vector and strip of pixels.
// norm/batchnorm_forward.cuh has the pieces.
#include "norm/batchnorm_forward.cuh"

#ifndef CONVJIT_NORM_VECTORS
#define CONVJIT_NORM_VECTORS 0
#endif

CONVJIT_KERNEL convjit_kernel_prepare(const convjit_device::storage_t* __restrict__ x,
                                      const convjit_device::storage_t* /*unused*/,
                                      convjit_device::storage_t* /*y*/, float /*alpha*/,
                                      float /*beta*/, convjit_device::scratch_t* workspace,
                                      const convjit_device::NormParams /*norm*/) {
  using namespace convjit_device;
  using namespace convjit_device::batchnorm;
  if constexpr (CONVJIT_NORM_VECTORS)
    sum_vectors([&](index_t c0) { return shifted_vector(x, c0); }, workspace);
  else
    sum_planes([&](index_t c) { return shifted_plane(x, c); }, workspace);
}

CONVJIT_KERNEL convjit_kernel_finish(const convjit_device::storage_t* __restrict__ x,
                                     const convjit_device::storage_t* /*unused*/,
                                     convjit_device::storage_t* /*y*/, float /*alpha*/,
                                     float /*beta*/, convjit_device::scratch_t* workspace,
                                     const convjit_device::NormParams norm) {
  using namespace convjit_device;
  using namespace convjit_device::batchnorm;
  finish_statistics(x, workspace, norm);
}

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* /*unused*/,
                              convjit_device::storage_t* __restrict__ y, float alpha, float beta,
                              convjit_device::scratch_t* workspace,
                              const convjit_device::NormParams norm) {
  using namespace convjit_device;
  using namespace convjit_device::batchnorm;
  if constexpr (CONVJIT_NORM_VECTORS)
    normalize_vectors(x, y, alpha, beta, workspace, norm);
  else
    normalize_elements(x, y, alpha, beta, workspace, norm);
}
