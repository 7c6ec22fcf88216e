// Depthwise convolution forward (groups = C, any multiplier M = K / C)
// for layouts with W contiguous (NCHW, NCDHW, halo buffers), built for
// bandwidth: y = act(alpha * conv(x, w) + bias [+ residual]) + beta * y.
// A block computes a tile of one (batch, filter) plane at one output depth
// (common/plane_tile.cuh):
// it stages the input the tile reads, halo and padding included, in
// shared memory with loads along W, then each thread sums its output's
// taps from there.  Global memory sees each input element about once per
// tile, in coalesced rows, instead of once per tap.
#include "common/fused_epilogue.cuh"
#include "common/plane_tile.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* __restrict__ w,
                              convjit_device::storage_t* __restrict__ y, float alpha, float beta,
                              convjit_device::scratch_t* /*workspace*/,
                              const convjit_device::storage_t* __restrict__ bias,
                              const convjit_device::storage_t* __restrict__ residual) {
  using namespace convjit_device;
  typedef Problem P;
  const FusedEpilogue<P> epilogue{alpha, beta, bias, residual};
  CONVJIT_SHARED_ARRAY(float, tile, CONVJIT_READING_HALO_ELEMENTS);
  const index_t multiplier = P::K / P::G;
  const int ty = static_cast<int>(threadIdx.x) / kTileCols;
  const int tx = static_cast<int>(threadIdx.x) % kTileCols;
  const index_t tiles = plane_tiles(P::K, P::OD, P::OH, P::OW);
  // The bound is the same for the whole block, so every thread meets every barrier.
  for (index_t block = blockIdx.x; block < tiles; block += gridDim.x) {
    const PlaneTile b = plane_tile(block, P::K, P::OD, P::OH, P::OW);
    const Halo halo = reading_halo(b);
    stage_halo(tile, x, b.n * P::XS0 + b.p / multiplier * P::XS1, halo, P::D, P::H, P::W, P::XS2,
               P::XS3, P::XS4);
    __syncthreads();
    const index_t oh = b.row0 + ty, ow = b.col0 + tx;
    if (oh < P::OH && ow < P::OW) {
      float acc = 0.0f;
      for (int t = 0; t < P::T; ++t)
        for (int r = 0; r < P::R; ++r)
          for (int s = 0; s < P::S; ++s)
            acc += load(w[b.p * P::WS0 + t * P::WS2 + r * P::WS3 + s * P::WS4]) *
                   tile[(t * P::DD * halo.rows + ty * P::SH + r * P::DH) * halo.cols +
                        tx * P::SW + s * P::DW];
      epilogue.write(y, b.n * P::YS0 + b.p * P::YS1 + b.d * P::YS2 + oh * P::YS3 + ow * P::YS4,
                     b.p, acc);
    }
    __syncthreads();  // the tile is read before the next staging overwrites it
  }
}
