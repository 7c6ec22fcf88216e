// A kernel launch through the driver: cuLaunchKernel, or cuLaunchKernelEx
// with a cluster dimension for a kernel launched in clusters of blocks
// (common/cluster.cuh), whose grid must then be whole clusters (the
// emulator refuses any other, as the driver does).
#pragma once

#include <cuda.h>

#include "convjit/status.hpp"
#include "dispatcher/cuda/cuda_driver.hpp"

namespace convjit {

struct LaunchShape {
  unsigned blocks = 1;
  unsigned block_threads = 256;
  unsigned dynamic_shared_bytes = 0;
  unsigned cluster_blocks = 1;  // 1: no clusters
};

// A persistent grid's blocks on a device of `sms` SMs (a block an SM,
// as the Hopper conv's persistent grids are: wgmma_conv.hpp): the grid
// the host sized for an H100's or H200's 132, cut to whole clusters of
// the device's SMs where it has fewer (an H100 PCIe's 114, a MIG slice's),
// so that no block waits for a second wave.  The blocks take their tiles
// in turn, so any grid of whole clusters computes the same output.
// `sms` <= 0 (unknown): unchanged.  `resident_clusters` > 0: the
// clusters the device can hold at once (max_active_clusters), fewer than
// its SMs' share where its GPCs' SMs do not divide into whole clusters.
[[nodiscard]] unsigned persistent_grid(unsigned blocks, int sms, unsigned cluster_blocks,
                                       int resident_clusters = 0);

// The clusters of `shape` the device can run at once
// (cuOccupancyMaxActiveClusters), or 0 where the driver cannot say (it
// lacks the call, CUDA 12.0; or `shape` is no cluster launch).  A cluster
// takes SMs of one GPC, so an H100's 132 SMs may hold fewer clusters of
// four than 33.  The kernel's dynamic shared memory must be allowed first.
[[nodiscard]] int max_active_clusters(const CudaDriverApi& api, CUfunction function,
                                      const LaunchShape& shape);

[[nodiscard]] Status launch_kernel(const CudaDriver& driver, CUfunction function,
                                   const LaunchShape& shape, CUstream stream, void** params);

}  // namespace convjit
