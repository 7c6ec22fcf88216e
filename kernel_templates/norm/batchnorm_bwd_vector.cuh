// BatchNorm backward in 16-byte channel vectors, for channels-last
// layouts: the entries of norm/batchnorm_bwd.cuh with a block per slice of
// the pixels, a thread per vector of channels, in the sums' first level,
// and a thread per channel vector and strip of pixels for dx.
#include "norm/batchnorm_backward.cuh"

CONVJIT_KERNEL convjit_kernel_prepare(const convjit_device::storage_t* __restrict__ x,
                                      const convjit_device::storage_t* __restrict__ dy,
                                      convjit_device::storage_t* /*dx*/, float /*alpha*/,
                                      float /*beta*/, convjit_device::scratch_t* workspace,
                                      const convjit_device::NormParams norm) {
  using namespace convjit_device;
  using namespace convjit_device::batchnorm;
  sum_vectors(
      [&](index_t c0) {
        GradientVector t{x, dy, c0, x_vectors(x), y_vectors(dy), {}};
        vector_stats(c0, workspace, norm, false, t.s);
        return t;
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
  dx_vectors(x, dy, dx, alpha, beta, workspace, norm);
}
