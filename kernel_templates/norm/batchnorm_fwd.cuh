// BatchNorm forward: y = alpha * act((x - mean) * invstd * scale + shift)
// + beta * y, a block per channel and slice of its pixels in the
// statistics' first level, a thread per element in the normalisation:
// for layouts whose channels are planes (NCHW and its kin).  Training
// runs convjit_kernel_prepare (the slices' sums), convjit_kernel_finish
// (each channel's mean and invstd, saved, and the running update) and
// convjit_kernel (the normalisation); inference convjit_kernel alone, on
// the running statistics.  norm/batchnorm_forward.cuh has the pieces.
#include "norm/batchnorm_forward.cuh"

CONVJIT_KERNEL convjit_kernel_prepare(const convjit_device::storage_t* __restrict__ x,
                                      const convjit_device::storage_t* /*unused*/,
                                      convjit_device::storage_t* /*y*/, float /*alpha*/,
                                      float /*beta*/, convjit_device::scratch_t* workspace,
                                      const convjit_device::NormParams /*norm*/) {
  using namespace convjit_device;
  using namespace convjit_device::batchnorm;
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
  normalize_elements(x, y, alpha, beta, workspace, norm);
}
