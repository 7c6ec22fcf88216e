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

[[nodiscard]] Status launch_kernel(const CudaDriver& driver, CUfunction function,
                                   const LaunchShape& shape, CUstream stream, void** params);

}  // namespace convjit
