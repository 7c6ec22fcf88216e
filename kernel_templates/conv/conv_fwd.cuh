// Convolution forward with its fused epilogue (common/fused_epilogue.cuh):
// y = act(alpha * conv(x, w) + bias [+ residual]) + beta * y.
// One thread per output element; the filter loops are unrolled over the
// constexpr filter size, and bounds checks vanish where padding is zero.
#include "common/fused_epilogue.cuh"
#include "common/grid.cuh"
#include "common/taps.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                                          const convjit_device::storage_t* __restrict__ w,
                                          convjit_device::storage_t* __restrict__ y, float alpha,
                                          float beta, convjit_device::scratch_t* /*workspace*/,
                                          const convjit_device::storage_t* __restrict__ bias,
                                          const convjit_device::storage_t* __restrict__ residual) {
  using namespace convjit_device;
  typedef Problem P;
  const FusedEpilogue<P> epilogue{alpha, beta, bias, residual};
  const index_t total = P::N * P::K * P::OD * P::OH * P::OW;
  const index_t filters_per_group = P::K / P::G;
  for (index_t i = thread_index(); i < total; i += thread_count()) {
    const index_t ow = i % P::OW, oh = (i / P::OW) % P::OH, od = (i / (P::OW * P::OH)) % P::OD;
    const index_t k = (i / (P::OW * P::OH * P::OD)) % P::K, n = i / (P::OW * P::OH * P::OD * P::K);
    const index_t c0 = (k / filters_per_group) * P::CG;
    const TapRange td = valid_taps(od, P::D, P::T, P::PD, P::SD, P::DD);
    const TapRange th = valid_taps(oh, P::H, P::R, P::PH, P::SH, P::DH);
    const TapRange tw = valid_taps(ow, P::W, P::S, P::PW, P::SW, P::DW);
    const storage_t* xn = x + n * P::XS0 + c0 * P::XS1;
    const storage_t* wk = w + k * P::WS0;
    float acc = 0.0f;
    for (index_t c = 0; c < P::CG; ++c) {
#pragma unroll
      for (int t = 0; t < P::T; ++t) {
        if (t < td.begin || t >= td.end) continue;
        const index_t id = od * P::SD - P::PD + t * P::DD;
#pragma unroll
        for (int r = 0; r < P::R; ++r) {
          if (r < th.begin || r >= th.end) continue;
          const index_t ih = oh * P::SH - P::PH + r * P::DH;
#pragma unroll
          for (int s = 0; s < P::S; ++s) {
            if (s < tw.begin || s >= tw.end) continue;
            const index_t iw = ow * P::SW - P::PW + s * P::DW;
            acc += load(xn[c * P::XS1 + id * P::XS2 + ih * P::XS3 + iw * P::XS4]) *
                   load(wk[c * P::WS1 + t * P::WS2 + r * P::WS3 + s * P::WS4]);
          }
        }
      }
    }
    epilogue.write(y, n * P::YS0 + k * P::YS1 + od * P::YS2 + oh * P::YS3 + ow * P::YS4, k, acc);
  }
}
