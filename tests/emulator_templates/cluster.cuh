// Test-only template (f32): clusters (common/cluster.cuh) with the
// remote mbarrier arrival (common/mbarrier.cuh) and the multicast TMA load
// (common/tma.cuh), as a Hopper conv's filter tile would share them.  In
// each cluster of blocks, block 0's thread 0 loads two boxes in turn, 8
// rows of 32 floats of maps.map[0] (rows 16 c + 8 round of cluster c), into
// `box` of every block at once; each block's threads wait for it on their
// own `full` barrier and write out[256 (2 b + round) + t] = box[t] + 1000 *
// rank + 100 * blocks (block b of the grid, its rank in the cluster), then
// arrive on block 0's `empty`, which block 0 waits for before it reloads.
// A barrier.cluster publishes the barriers' inits, and another keeps each
// block from returning while the others may still arrive on its barriers.
// Planted bugs (P::MODE): 1 no barrier at all after the inits; 2 a
// __syncthreads() in place of the first barrier.cluster; 3 one in place
// of the last; 4 block 0 reloads without waiting for `empty`; 5 a multicast
// mask naming a block past the cluster; 6 a mapa to rank 2 of a cluster of
// 2; 7 the last block's threads skip the last barrier.cluster; 8 each
// thread reads the next block's box through distributed shared memory
// after the last barrier.cluster, which no longer keeps that block alive.
#include "common/cluster.cuh"
#include "common/grid.cuh"
#include "common/tma.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* /*in0*/,
                              const convjit_device::storage_t* /*in1*/,
                              convjit_device::storage_t* out, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* /*workspace*/,
                              const convjit_device::storage_t* /*bias*/,
                              const convjit_device::storage_t* /*residual*/,
                              const CONVJIT_GRID_CONSTANT convjit_device::tensor_maps_t maps) {
  using namespace convjit_device;
  typedef Problem P;
  CONVJIT_SHARED_ARRAY(mbarrier_t, bars, 2);  // full, empty
  CONVJIT_SHARED_ARRAY_ALIGNED(float, box, 256, 1024);
  const unsigned t = threadIdx.x, b = blockIdx.x;
  const unsigned rank = cluster_rank(), blocks = cluster_blocks();
  const unsigned cluster = b / blocks, last = blocks - 1;
  if (t == 0) {
    mbarrier_init(&bars[0], 1);
    mbarrier_init(&bars[1], static_cast<unsigned>(P::BLOCK) * blocks);
    fence_mbarrier_init();
  }
  if (P::MODE == 2) __syncthreads();
  if (P::MODE != 1 && P::MODE != 2) cluster_sync();
  const unsigned short everyone =
      static_cast<unsigned short>(P::MODE == 5 ? (1u << (blocks + 1)) - 1 : (1u << blocks) - 1);
  for (unsigned round = 0; round < 2; ++round) {
    if (t == 0) mbarrier_arrive_expect_tx(&bars[0], 256 * 4);
    if (rank == 0 && t == 0) {
      if (round > 0 && P::MODE != 4) mbarrier_wait_parity(&bars[1], (round - 1) & 1);
      const int row = static_cast<int>(16 * cluster + 8 * round);
      tma_load_tile_multicast(&box[0], maps.map[0], &bars[0], {0, row}, everyone);
    }
    mbarrier_wait_parity(&bars[0], round & 1);
    out[256 * (2 * b + round) + t] =
        store(box[t] + 1000.0f * static_cast<float>(rank) + 100.0f * static_cast<float>(blocks));
    mbarrier_arrive_cluster(cluster_map(&bars[1], P::MODE == 6 ? 2u : 0u));
  }
  if (P::MODE == 3) __syncthreads();
  if (P::MODE != 3 && !(P::MODE == 7 && rank == last)) cluster_sync();
  if (P::MODE == 8)
    out[512 * b + t] =
        store(__uint_as_float(load_cluster_64(&box[t / 2 * 2], (rank + 1) % blocks).w[t % 2]));
  if (t == 0) {
    mbarrier_inval(&bars[0]);
    mbarrier_inval(&bars[1]);
  }
}
