// Bias gradient: db[k] = alpha * sum of dy over batch and space + beta * db[k].
// One block per filter: each thread sums a strided share of the filter's
// dy elements, then the block adds the P::BLOCK partial sums as a tree in
// shared memory.  The order is fixed, so results are bit-reproducible.
#include "common/epilogue.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* /*unused*/,
                              const convjit_device::storage_t* __restrict__ dy,
                              convjit_device::storage_t* __restrict__ db, float alpha, float beta,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  CONVJIT_SHARED_ARRAY(float, partial, P::BLOCK);
  const index_t per_filter = P::N * P::OD * P::OH * P::OW;
  const index_t lane = threadIdx.x;
  // The loop bound is the same for the whole block, so every thread meets
  // every barrier.
  for (index_t k = blockIdx.x; k < P::K; k += gridDim.x) {
    float acc = 0.0f;
    for (index_t j = lane; j < per_filter; j += P::BLOCK) {
      const index_t ow = j % P::OW, oh = (j / P::OW) % P::OH, od = (j / (P::OW * P::OH)) % P::OD;
      const index_t n = j / (P::OW * P::OH * P::OD);
      acc += load(dy[n * P::YS0 + k * P::YS1 + od * P::YS2 + oh * P::YS3 + ow * P::YS4]);
    }
    partial[lane] = acc;
    __syncthreads();
    for (index_t half = P::BLOCK / 2; half > 0; half /= 2) {
      if (lane < half) partial[lane] += partial[lane + half];
      __syncthreads();
    }
    if (lane == 0) scale_store(db + k, partial[0], alpha, beta);
    __syncthreads();  // partial[0] is read before the next filter overwrites it
  }
}
