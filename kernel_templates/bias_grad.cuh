// Bias gradient: db[k] = alpha * sum of dy over batch and space + beta * db[k].
// One thread per filter, summing in a fixed order (deterministic).
#include "common.cuh"

extern "C" __global__ void convjit_kernel(const convjit_device::storage_t* /*unused*/,
                                          const convjit_device::storage_t* __restrict__ dy,
                                          convjit_device::storage_t* __restrict__ db, float alpha,
                                          float beta, float* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  for (index_t k = thread_index(); k < P::K; k += thread_count()) {
    float acc = 0.0f;
    for (index_t n = 0; n < P::N; ++n)
      for (index_t od = 0; od < P::OD; ++od)
        for (index_t oh = 0; oh < P::OH; ++oh)
          for (index_t ow = 0; ow < P::OW; ++ow)
            acc += load(dy[n * P::YS0 + k * P::YS1 + od * P::YS2 + oh * P::YS3 + ow * P::YS4]);
    scale_store(db + k, acc, alpha, beta);
  }
}
