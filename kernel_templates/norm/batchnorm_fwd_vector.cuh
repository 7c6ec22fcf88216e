// BatchNorm forward in 16-byte channel vectors, for channels-last layouts:
// the entries of norm/batchnorm_fwd.cuh with a block per slice of the
// pixels, a thread per vector of channels, in the statistics' first level,
// and a thread per channel vector and strip of pixels in the normalisation.
#include "norm/batchnorm_forward.cuh"

CONVJIT_KERNEL convjit_kernel_prepare(const convjit_device::storage_t* __restrict__ x,
                                      const convjit_device::storage_t* /*unused*/,
                                      convjit_device::storage_t* /*y*/, float /*alpha*/,
                                      float /*beta*/, convjit_device::scratch_t* workspace,
                                      const convjit_device::NormParams /*norm*/) {
  using namespace convjit_device;
  using namespace convjit_device::batchnorm;
  sum_vectors([&](index_t c0) { return shifted_vector(x, c0); }, workspace);
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
  normalize_vectors(x, y, alpha, beta, workspace, norm);
}
