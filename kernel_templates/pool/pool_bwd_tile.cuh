// Pooling backward for layouts with W contiguous (NCHW, NCDHW, halo
// buffers), built for bandwidth: dx = alpha * pool_bwd(x, dy) + beta * dx.
// A block computes a tile of one (batch, channel) plane of dx at one input
// depth (common/plane_tile.cuh).  It stages the part of dy the tile
// receives from and, for max pooling, the part of x those outputs' windows
// cover, both in shared memory with loads along W; then each thread
// gathers from the windows that hold its input, recomputing each max
// window's winner from the staged x (no index tensor, no atomics).
#include "common/epilogue.cuh"
#include "common/plane_tile.cuh"
#include "pool/pool_common.cuh"

namespace convjit_device {
namespace pool_bwd_tile {

// The part of x the windows of the outputs in `g` cover, padding included.
__device__ __forceinline__ Halo window_halo(const Halo& g) {
  return {g.d0 * P::SD - P::PD,
          g.h0 * P::SH - P::PH,
          g.w0 * P::SW - P::PW,
          (g.depth - 1) * P::SD + (P::T - 1) * P::DD + 1,
          (g.rows - 1) * P::SH + (P::R - 1) * P::DH + 1,
          (g.cols - 1) * P::SW + (P::S - 1) * P::DW + 1};
}

}  // namespace pool_bwd_tile
}  // namespace convjit_device

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* __restrict__ dy,
                              convjit_device::storage_t* __restrict__ dx, float alpha, float beta,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  using namespace convjit_device::pool_bwd_tile;
  CONVJIT_SHARED_ARRAY(float, gradients, CONVJIT_RECEIVING_HALO_ELEMENTS);
  CONVJIT_SHARED_ARRAY(float, inputs,
                       P::MODE != 1 ? 1
                                    : ((CONVJIT_RECEIVING_HALO_DEPTH - 1) * P::SD +
                                       (P::T - 1) * P::DD + 1) *
                                          ((CONVJIT_RECEIVING_HALO_ROWS - 1) * P::SH +
                                           (P::R - 1) * P::DH + 1) *
                                          ((CONVJIT_RECEIVING_HALO_COLS - 1) * P::SW +
                                           (P::S - 1) * P::DW + 1));
  const int ty = static_cast<int>(threadIdx.x) / kTileCols;
  const int tx = static_cast<int>(threadIdx.x) % kTileCols;
  const index_t tiles = plane_tiles(P::C, P::D, P::H, P::W);
  // The bounds are the same for the whole block, so every thread meets every barrier.
  for (index_t block = blockIdx.x; block < tiles; block += gridDim.x) {
    const PlaneTile b = plane_tile(block, P::C, P::D, P::H, P::W);
    const Halo g = receiving_halo(b), window = window_halo(g);
    stage_halo(gradients, dy, b.n * P::YS0 + b.p * P::YS1, g, P::OD, P::OH, P::OW, P::YS2,
               P::YS3, P::YS4);
    if (P::MODE == 1)
      stage_halo(inputs, x, b.n * P::XS0 + b.p * P::XS1, window, P::D, P::H, P::W, P::XS2,
                 P::XS3, P::XS4);
    __syncthreads();
    const index_t ih = b.row0 + ty, iw = b.col0 + tx;
    const HaloReader<decltype(inputs)> staged_x{inputs, window};
    float acc = 0.0f;
    for (int t = 0; t < P::T; ++t) {
      const index_t ld = source(b.d, t, P::PD, P::SD, P::DD, g.d0);
      if (ld < 0 || g.d0 + ld >= P::OD || g.d0 + ld < 0) continue;
      for (int r = 0; r < P::R; ++r) {
        const index_t lh = source(ih, r, P::PH, P::SH, P::DH, g.h0);
        if (lh < 0 || g.h0 + lh >= P::OH || g.h0 + lh < 0) continue;
        for (int s = 0; s < P::S; ++s) {
          const index_t lw = source(iw, s, P::PW, P::SW, P::DW, g.w0);
          if (lw < 0 || g.w0 + lw >= P::OW || g.w0 + lw < 0) continue;
          const float grad = gradients[(ld * g.rows + lh) * g.cols + lw];
          const Window win = window_at(g.d0 + ld, g.h0 + lh, g.w0 + lw);
          if (P::MODE == 1) {
            const ArgMax best = argmax_of(win, staged_x);
            if (best.found && best.d == b.d && best.h == ih && best.w == iw) acc += grad;
          } else {
            acc += grad / divisor(win);
          }
        }
      }
    }
    if (ih < P::H && iw < P::W)
      scale_store(dx + b.n * P::XS0 + b.p * P::XS1 + b.d * P::XS2 + ih * P::XS3 + iw * P::XS4,
                  acc, alpha, beta);
    __syncthreads();  // the tiles are read before the next staging overwrites them
  }
}
