#include "dispatcher/cuda/kernel_launch.hpp"

#include <algorithm>

namespace convjit {

unsigned persistent_grid(unsigned blocks, int sms, unsigned cluster_blocks, int resident_clusters) {
  const unsigned cluster = std::max(cluster_blocks, 1u);
  if (sms <= 0) return blocks;
  unsigned clusters = static_cast<unsigned>(sms) / cluster;
  if (resident_clusters > 0)
    clusters = std::min(clusters, static_cast<unsigned>(resident_clusters));
  return std::min(blocks, std::max(clusters * cluster, cluster));
}

namespace {

// cuLaunchKernelEx's configuration of `shape` (its one attribute, the
// cluster dimension, in `cluster`).
CUlaunchConfig launch_config(const LaunchShape& shape, CUstream stream,
                             CUlaunchAttribute& cluster) {
  cluster = CUlaunchAttribute{};
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim.x = shape.cluster_blocks;
  cluster.value.clusterDim.y = cluster.value.clusterDim.z = 1;
  CUlaunchConfig config{};
  config.gridDimX = shape.blocks, config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = shape.block_threads, config.blockDimY = config.blockDimZ = 1;
  config.sharedMemBytes = shape.dynamic_shared_bytes;
  config.hStream = stream;
  config.attrs = &cluster;
  config.numAttrs = 1;
  return config;
}

}  // namespace

int max_active_clusters(const CudaDriverApi& api, CUfunction function, const LaunchShape& shape) {
  if (shape.cluster_blocks <= 1 || api.occupancy_max_active_clusters == nullptr) return 0;
  CUlaunchAttribute cluster;
  const CUlaunchConfig config = launch_config(shape, nullptr, cluster);
  int clusters = 0;
  if (api.occupancy_max_active_clusters(&clusters, function, &config) != CUDA_SUCCESS) return 0;
  return clusters;
}

Status launch_kernel(const CudaDriver& driver, CUfunction function, const LaunchShape& shape,
                     CUstream stream, void** params) {
  const CudaDriverApi& api = driver.api();
  if (shape.cluster_blocks <= 1)
    return driver.check(api.launch_kernel(function, shape.blocks, 1, 1, shape.block_threads, 1, 1,
                                          shape.dynamic_shared_bytes, stream, params, nullptr),
                        "cuLaunchKernel");
  if (api.launch_kernel_ex == nullptr)
    return Status::not_available(
        "the CUDA driver lacks cuLaunchKernelEx (CUDA 12.0): it cannot launch clusters; update "
        "the driver");
  CUlaunchAttribute cluster;
  const CUlaunchConfig config = launch_config(shape, stream, cluster);
  return driver.check(api.launch_kernel_ex(&config, function, params, nullptr), "cuLaunchKernelEx");
}

}  // namespace convjit
