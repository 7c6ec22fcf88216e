// Depthwise convolution backward data (groups = C, any multiplier M =
// K / C) for layouts with W contiguous (NCHW, NCDHW, halo buffers), built
// for bandwidth: dx = alpha * conv^T(dy, w) + beta * dx.  A block computes
// a tile of one (batch, channel) plane at one input depth
// (common/plane_tile.cuh): per filter of the channel it stages the part
// of dy the tile receives from, halo included, in shared memory with
// loads along W, then each thread sums the taps that reach its input.
#include "common/plane_tile.cuh"


CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ dy,
                              const convjit_device::storage_t* __restrict__ w,
                              convjit_device::storage_t* __restrict__ dx, float alpha, float beta,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  CONVJIT_SHARED_ARRAY(float, tile, CONVJIT_RECEIVING_HALO_ELEMENTS);
  const index_t multiplier = P::K / P::G;
  const int ty = static_cast<int>(threadIdx.x) / kTileCols;
  const int tx = static_cast<int>(threadIdx.x) % kTileCols;
  const index_t tiles = plane_tiles(P::C, P::D, P::H, P::W);
  // The bounds are the same for the whole block, so every thread meets every barrier.
  for (index_t block = blockIdx.x; block < tiles; block += gridDim.x) {
    const PlaneTile b = plane_tile(block, P::C, P::D, P::H, P::W);
    const Halo halo = receiving_halo(b);
    const index_t ih = b.row0 + ty, iw = b.col0 + tx;
    float acc = 0.0f;
    for (index_t m = 0; m < multiplier; ++m) {
      const index_t k = b.p * multiplier + m;
      stage_halo(tile, dy, b.n * P::YS0 + k * P::YS1, halo, P::OD, P::OH, P::OW, P::YS2, P::YS3,
                 P::YS4);
      __syncthreads();
      for (int t = 0; t < P::T; ++t) {
        const index_t ld = source(b.d, t, P::PD, P::SD, P::DD, halo.d0);
        if (ld < 0) continue;
        for (int r = 0; r < P::R; ++r) {
          const index_t lh = source(ih, r, P::PH, P::SH, P::DH, halo.h0);
          if (lh < 0) continue;
          for (int s = 0; s < P::S; ++s) {
            const index_t lw = source(iw, s, P::PW, P::SW, P::DW, halo.w0);
            if (lw < 0) continue;
            acc += load(w[k * P::WS0 + t * P::WS2 + r * P::WS3 + s * P::WS4]) *
                   tile[(ld * halo.rows + lh) * halo.cols + lw];
          }
        }
      }
      __syncthreads();  // the tile is read before the next staging overwrites it
    }
    if (ih < P::H && iw < P::W)
      scale_store(dx + b.n * P::XS0 + b.p * P::XS1 + b.d * P::XS2 + ih * P::XS3 + iw * P::XS4,
                  acc, alpha, beta);
  }
}
