// Pooling forward for layouts with W contiguous (NCHW, NCDHW, halo
// buffers), built for bandwidth: y = alpha * pool(x) + beta * y.  A block
// computes a tile of one (batch, channel) plane at one output depth
// (common/plane_tile.cuh): it stages the input the tile's windows cover in
// shared memory with loads along W, then each thread pools its output's
// window from there.  Global memory sees each input element about once per
// tile, in coalesced rows, instead of once per window that holds it.
#include "common/epilogue.cuh"
#include "common/plane_tile.cuh"
#include "pool/pool_common.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* /*unused*/,
                              convjit_device::storage_t* __restrict__ y, float alpha, float beta,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  CONVJIT_SHARED_ARRAY(float, tile, CONVJIT_READING_HALO_ELEMENTS);
  const int ty = static_cast<int>(threadIdx.x) / kTileCols;
  const int tx = static_cast<int>(threadIdx.x) % kTileCols;
  const index_t tiles = plane_tiles(P::C, P::OD, P::OH, P::OW);
  // The bound is the same for the whole block, so every thread meets every barrier.
  for (index_t block = blockIdx.x; block < tiles; block += gridDim.x) {
    const PlaneTile b = plane_tile(block, P::C, P::OD, P::OH, P::OW);
    const Halo halo = reading_halo(b);
    stage_halo(tile, x, b.n * P::XS0 + b.p * P::XS1, halo, P::D, P::H, P::W, P::XS2, P::XS3,
               P::XS4);
    __syncthreads();
    const index_t oh = b.row0 + ty, ow = b.col0 + tx;
    if (oh < P::OH && ow < P::OW) {
      const float value = pooled(window_at(b.d, oh, ow), HaloReader<decltype(tile)>{tile, halo});
      scale_store(y + b.n * P::YS0 + b.p * P::YS1 + b.d * P::YS2 + oh * P::YS3 + ow * P::YS4,
                  value, alpha, beta);
    }
    __syncthreads();  // the tile is read before the next staging overwrites it
  }
}
