// Convolution backward data: dx = alpha * conv_transpose(dy, w) + beta * dx.
// One thread per dx element gathers every (output, tap) pair that read it,
// so no atomics are needed and the result is deterministic.
#include "common/epilogue.cuh"
#include "common/grid.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ dy,
                                          const convjit_device::storage_t* __restrict__ w,
                                          convjit_device::storage_t* __restrict__ dx, float alpha,
                                          float beta, convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  const index_t total = P::N * P::C * P::D * P::H * P::W;
  const index_t filters_per_group = P::K / P::G;
  for (index_t i = thread_index(); i < total; i += thread_count()) {
    const index_t iw = i % P::W, ih = (i / P::W) % P::H, id = (i / (P::W * P::H)) % P::D;
    const index_t c = (i / (P::W * P::H * P::D)) % P::C, n = i / (P::W * P::H * P::D * P::C);
    const index_t k0 = (c / P::CG) * filters_per_group, cw = c % P::CG;
    float acc = 0.0f;
    for (index_t k = k0; k < k0 + filters_per_group; ++k) {
#pragma unroll
      for (int t = 0; t < P::T; ++t) {
        const index_t pd = id + P::PD - t * P::DD;  // = od * stride
        if (pd < 0 || pd % P::SD != 0 || pd / P::SD >= P::OD) continue;
#pragma unroll
        for (int r = 0; r < P::R; ++r) {
          const index_t ph = ih + P::PH - r * P::DH;
          if (ph < 0 || ph % P::SH != 0 || ph / P::SH >= P::OH) continue;
#pragma unroll
          for (int s = 0; s < P::S; ++s) {
            const index_t pw = iw + P::PW - s * P::DW;
            if (pw < 0 || pw % P::SW != 0 || pw / P::SW >= P::OW) continue;
            acc += load(dy[n * P::YS0 + k * P::YS1 + (pd / P::SD) * P::YS2 + (ph / P::SH) * P::YS3 +
                           (pw / P::SW) * P::YS4]) *
                   load(w[k * P::WS0 + cw * P::WS1 + t * P::WS2 + r * P::WS3 + s * P::WS4]);
          }
        }
      }
    }
    scale_store(dx + n * P::XS0 + c * P::XS1 + id * P::XS2 + ih * P::XS3 + iw * P::XS4, acc, alpha,
                beta);
  }
}
