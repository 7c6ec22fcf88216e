// Depthwise convolution backward filter (groups = C, any multiplier M =
// K / C) for layouts with W contiguous (NCHW, NCDHW, halo buffers), built
// for bandwidth: dw = alpha * correlate(x, dy) + beta * dw.  A block owns
// one filter and a slice of its dy planes' tiles (common/plane_tile.cuh),
// P::SPLIT slices per filter: per tile it stages the input the tile's
// outputs read in shared memory with loads along W, and each thread adds
// its output's dy times the staged input to its share of each tap.  The
// block then sums the shares of each tap in a fixed order
// (common/block_sum.cuh) into the slice's partial sum, and
// convjit_kernel_finish adds the slices in order (conv/weight_partials.cuh):
// deterministic, no atomics.  Taps are done kTapsPerPass at a time, each
// pass staging its tiles again, so registers stay bounded for any filter.
#include "common/block_sum.cuh"
#include "common/plane_tile.cuh"
#include "conv/weight_partials.cuh"

namespace convjit_device {
namespace depthwise_bwdfilt_tile {

typedef Problem P;

constexpr int kTapsPerPass = 9;

// The tiles of one filter's dy planes: batch, depth, rows, columns.
__device__ __forceinline__ index_t filter_tiles() { return plane_tiles(1, P::OD, P::OH, P::OW); }

}  // namespace depthwise_bwdfilt_tile
}  // namespace convjit_device

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* __restrict__ x,
                              const convjit_device::storage_t* __restrict__ dy,
                              convjit_device::storage_t* /*dw*/, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* __restrict__ partial) {
  using namespace convjit_device;
  using namespace convjit_device::depthwise_bwdfilt_tile;
  CONVJIT_SHARED_ARRAY(float, tile, CONVJIT_READING_HALO_ELEMENTS);
  CONVJIT_SHARED_ARRAY(float, warp_sums, P::BLOCK / kWarpSize);
  const index_t k = blockIdx.x / P::SPLIT, part = blockIdx.x % P::SPLIT;
  const index_t c = k / (P::K / P::G), taps = P::T * P::R * P::S;
  const int ty = static_cast<int>(threadIdx.x) / kTileCols;
  const int tx = static_cast<int>(threadIdx.x) % kTileCols;
  for (index_t first_tap = 0; first_tap < taps; first_tap += kTapsPerPass) {
    float acc[kTapsPerPass] = {};
    // The bounds are the same for the whole block, so every thread meets every barrier.
    for (index_t u = part; u < filter_tiles(); u += P::SPLIT) {
      const PlaneTile b = plane_tile(u, 1, P::OD, P::OH, P::OW);
      const Halo halo = reading_halo(b);
      stage_halo(tile, x, b.n * P::XS0 + c * P::XS1, halo, P::D, P::H, P::W, P::XS2, P::XS3,
                 P::XS4);
      __syncthreads();
      const index_t oh = b.row0 + ty, ow = b.col0 + tx;
      if (oh < P::OH && ow < P::OW) {
        const float grad =
            load(dy[b.n * P::YS0 + k * P::YS1 + b.d * P::YS2 + oh * P::YS3 + ow * P::YS4]);
#pragma unroll
        for (int j = 0; j < kTapsPerPass; ++j) {
          const index_t tap = first_tap + j;
          if (tap >= taps) break;
          const index_t t = tap / (P::R * P::S), r = tap / P::S % P::R, s = tap % P::S;
          acc[j] += grad * tile[(t * P::DD * halo.rows + ty * P::SH + r * P::DH) * halo.cols +
                                tx * P::SW + s * P::DW];
        }
      }
      __syncthreads();  // the tile is read before the next staging overwrites it
    }
    scratch_t* const sums = partial + part * weight_count() + k * taps;
#pragma unroll
    for (int j = 0; j < kTapsPerPass; ++j) {
      if (first_tap + j >= taps) break;
      const float total = block_sum(acc[j], warp_sums);
      if (threadIdx.x == 0) sums[first_tap + j] = total;
    }
  }
}

CONVJIT_KERNEL convjit_kernel_finish(const convjit_device::storage_t* /*x*/,
                                     const convjit_device::storage_t* /*dy*/,
                                     convjit_device::storage_t* __restrict__ dw, float alpha,
                                     float beta, convjit_device::scratch_t* __restrict__ partial) {
  convjit_device::finish_weight_partials(dw, alpha, beta, partial);
}
