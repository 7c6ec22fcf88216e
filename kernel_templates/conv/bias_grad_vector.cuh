// Bias gradient in 16-byte channel vectors (common/channel_vectors.cuh),
// for channels-last dy: db[k] = alpha * sum of dy over batch and space +
// beta * db[k], in one pass over dy.  A thread owns one vector of filters
// and sums it over a slice of the pixels, P::SPLIT slices in all, so that
// every SM streams dy whatever K is, and a warp's loads run along the
// channels of a pixel.  The slices' f32 sums go to the workspace, and
// convjit_kernel_finish adds them in slice order: deterministic, no atomics.
#include "common/channel_vectors.cuh"

namespace convjit_device {
namespace bias_grad_vector {

typedef Problem P;

__device__ __forceinline__ index_t pixel_count() { return P::N * P::OD * P::OH * P::OW; }

}  // namespace bias_grad_vector
}  // namespace convjit_device

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* /*unused*/,
                              const convjit_device::storage_t* __restrict__ dy,
                              convjit_device::storage_t* /*db*/, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* __restrict__ partial) {
  using namespace convjit_device;
  using namespace convjit_device::bias_grad_vector;
  const bool vector = chunked(P::K, P::YS1, P::YS0, P::YS2, P::YS3, P::YS4) && chunk_aligned(dy);
  const index_t slice = (pixel_count() + P::SPLIT - 1) / P::SPLIT;
  const index_t vectors = vector_count(P::K);
  for (index_t i = thread_index(); i < vectors * P::SPLIT; i += thread_count()) {
    const index_t k0 = i % vectors * kChunkElements, part = i / vectors;
    const index_t first = part * slice;
    const index_t last = first + slice < pixel_count() ? first + slice : pixel_count();
    float acc[kChunkElements] = {};
    for (index_t q = first; q < last; ++q) {
      const index_t ow = q % P::OW, oh = q / P::OW % P::OH, od = q / (P::OW * P::OH) % P::OD;
      const index_t n = q / (P::OW * P::OH * P::OD);
      float v[kChunkElements];
      read_channels(dy, n * P::YS0 + od * P::YS2 + oh * P::YS3 + ow * P::YS4, k0, P::K, P::YS1,
                    vector, v);
#pragma unroll
      for (int j = 0; j < kChunkElements; ++j) acc[j] += v[j];
    }
#pragma unroll
    for (int j = 0; j < kChunkElements; ++j)
      if (k0 + j < P::K) partial[part * P::K + k0 + j] = acc[j];
  }
}

CONVJIT_KERNEL convjit_kernel_finish(const convjit_device::storage_t* /*unused*/,
                                     const convjit_device::storage_t* /*dy*/,
                                     convjit_device::storage_t* __restrict__ db, float alpha,
                                     float beta, convjit_device::scratch_t* __restrict__ partial) {
  using namespace convjit_device;
  typedef Problem P;
  for (index_t k = thread_index(); k < P::K; k += thread_count()) {
    float acc = 0.0f;
    for (index_t part = 0; part < P::SPLIT; ++part) acc += partial[part * P::K + k];
    scale_store(db + k, acc, alpha, beta);
  }
}
