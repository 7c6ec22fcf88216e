#include "analysis/occupancy.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

// NVIDIA's header: plain C++ outside nvcc.  It includes no CUDA runtime.
#include <cuda_occupancy.h>

namespace convjit::analysis {

namespace {

cudaOccDeviceProp device_properties(const GpuSpec& gpu) {
  cudaOccDeviceProp p;
  p.computeMajor = gpu.compute_major;
  p.computeMinor = gpu.compute_minor;
  p.maxThreadsPerBlock = gpu.max_threads_per_block;
  p.maxThreadsPerMultiprocessor = gpu.max_threads_per_sm;
  p.regsPerBlock = gpu.registers_per_block;
  p.regsPerMultiprocessor = gpu.registers_per_sm;
  p.warpSize = 32;
  p.sharedMemPerBlock = gpu.shared_per_block;
  p.sharedMemPerMultiprocessor = gpu.shared_per_sm;
  p.numSms = gpu.sms;
  p.sharedMemPerBlockOptin = gpu.shared_per_block_optin;
  p.reservedSharedMemPerBlock = gpu.shared_reserved_per_block;
  return p;
}

cudaOccFuncAttributes function_attributes(const GpuSpec& gpu, const EntryResources& entry,
                                          std::size_t dynamic_shared_bytes) {
  cudaOccFuncAttributes f;
  f.maxThreadsPerBlock = gpu.max_threads_per_block;  // no __launch_bounds__ of its own
  f.numRegs = entry.registers;
  f.sharedSizeBytes = static_cast<std::size_t>(entry.shared_bytes);
  f.partitionedGCConfig = PARTITIONED_GC_OFF;
  f.shmemLimitConfig = dynamic_shared_bytes > 0 ? FUNC_SHMEM_LIMIT_OPTIN : FUNC_SHMEM_LIMIT_DEFAULT;
  f.maxDynamicSharedSizeBytes = dynamic_shared_bytes;
  f.numBlockBarriers = entry.barriers;
  return f;
}

// The tightest of the limits the calculator reports; every one of them
// where several are equal ("registers and warps").
std::string limiter(const cudaOccResult& r) {
  const std::pair<int, const char*> limits[] = {{r.blockLimitRegs, "registers"},
                                                {r.blockLimitSharedMem, "shared memory"},
                                                {r.blockLimitWarps, "warps"},
                                                {r.blockLimitBlocks, "blocks"},
                                                {r.blockLimitBarriers, "barriers"}};
  int tightest = INT_MAX;
  for (const auto& limit : limits) tightest = std::min(tightest, limit.first);
  std::string names;
  for (const auto& [blocks, name] : limits)
    if (blocks == tightest) names += fmt::format("{}{}", names.empty() ? "" : " and ", name);
  return names;
}

}  // namespace

Result<Occupancy> occupancy(const GpuSpec& gpu, const EntryResources& entry,
                            int threads_per_block, std::size_t dynamic_shared_bytes) {
  const cudaOccDeviceProp properties = device_properties(gpu);
  const cudaOccFuncAttributes attributes = function_attributes(gpu, entry, dynamic_shared_bytes);
  const cudaOccDeviceState state;
  cudaOccResult result{};
  if (cudaOccMaxActiveBlocksPerMultiprocessor(&result, &properties, &attributes, &state,
                                              threads_per_block, dynamic_shared_bytes) !=
      CUDA_OCC_SUCCESS)
    return Status::invalid(fmt::format("{}: the occupancy calculator refused {} threads, {} "
                                       "registers, {} bytes of shared memory",
                                       gpu.name, threads_per_block, entry.registers,
                                       entry.shared_bytes + dynamic_shared_bytes));
  Occupancy out;
  out.blocks_per_sm = result.activeBlocksPerMultiprocessor;
  out.warps_per_sm = out.blocks_per_sm * ((threads_per_block + 31) / 32);
  out.max_warps_per_sm = gpu.max_threads_per_sm / 32;
  out.limiter = limiter(result);
  if (out.blocks_per_sm == 0)
    return Status::invalid(fmt::format("{}: a block of {} threads does not fit an SM ({} limits "
                                       "it: {} registers, {} bytes of shared memory)",
                                       gpu.name, threads_per_block, out.limiter, entry.registers,
                                       entry.shared_bytes + dynamic_shared_bytes));
  return out;
}

}  // namespace convjit::analysis
