// Convolution backward filter: dw = alpha * correlate(x, dy) + beta * dw.
// The reduction over batch and output positions is split across threads
// in two deterministic passes: convjit_kernel writes P::SPLIT partial sums
// per weight element into the workspace, convjit_kernel_finish adds them
// in a fixed order.  No atomics, so results are bit-reproducible.
#include "common/taps.cuh"
#include "conv/weight_partials.cuh"

namespace convjit_device {
typedef Problem P;
__device__ __forceinline__ index_t reduction_length() { return P::N * P::OD * P::OH * P::OW; }
}  // namespace convjit_device

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* __restrict__ dy,
                              convjit_device::storage_t* /*dw*/, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* __restrict__ partial) {
  using namespace convjit_device;
  const index_t filters_per_group = P::K / P::G;
  const index_t weights = weight_count(), reduction = reduction_length();
  const index_t chunk = (reduction + P::SPLIT - 1) / P::SPLIT;
  for (index_t i = thread_index(); i < weights * P::SPLIT; i += thread_count()) {
    const index_t e = i % weights, part = i / weights;
    const index_t s = e % P::S, r = (e / P::S) % P::R, t = (e / (P::S * P::R)) % P::T;
    const index_t cw = (e / (P::S * P::R * P::T)) % P::CG, k = e / (P::S * P::R * P::T * P::CG);
    const index_t c = (k / filters_per_group) * P::CG + cw;
    const index_t first = part * chunk;
    const index_t last = first + chunk < reduction ? first + chunk : reduction;
    float acc = 0.0f;
    for (index_t j = first; j < last; ++j) {
      const index_t ow = j % P::OW, oh = (j / P::OW) % P::OH, od = (j / (P::OW * P::OH)) % P::OD;
      const index_t n = j / (P::OW * P::OH * P::OD);
      const index_t id = od * P::SD - P::PD + t * P::DD;
      const index_t ih = oh * P::SH - P::PH + r * P::DH;
      const index_t iw = ow * P::SW - P::PW + s * P::DW;
      if (!inside(id, ih, iw, P::D, P::H, P::W)) continue;
      acc += load(x[n * P::XS0 + c * P::XS1 + id * P::XS2 + ih * P::XS3 + iw * P::XS4]) *
             load(dy[n * P::YS0 + k * P::YS1 + od * P::YS2 + oh * P::YS3 + ow * P::YS4]);
    }
    partial[part * weights + e] = acc;
  }
}

CONVJIT_KERNEL convjit_kernel_finish(const convjit_device::storage_t* /*x*/,
                                     const convjit_device::storage_t* /*dy*/,
                                     convjit_device::storage_t* __restrict__ dw, float alpha,
                                     float beta, convjit_device::scratch_t* __restrict__ partial) {
  convjit_device::finish_weight_partials(dw, alpha, beta, partial);
}
