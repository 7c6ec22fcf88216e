// How many blocks of an entry an SM holds at once, and what stops it
// holding more, from the CUDA toolkit's occupancy calculator
// (cuda_occupancy.h: header-only, the same rules the driver applies, no
// GPU needed).
#pragma once

#include <string>

#include "analysis/entry_resources.hpp"
#include "analysis/gpu_spec.hpp"
#include "dispatcher/result.hpp"

namespace convjit::analysis {

struct Occupancy {
  int blocks_per_sm = 0;
  int warps_per_sm = 0;
  int max_warps_per_sm = 0;
  std::string limiter;  // "registers", "shared memory", "warps", "blocks", "barriers"
  [[nodiscard]] double fraction() const {
    return max_warps_per_sm == 0 ? 0.0 : double(warps_per_sm) / max_warps_per_sm;
  }
};

// For blocks of `threads_per_block` threads with `dynamic_shared_bytes` of
// dynamic shared memory (opted in up to the GPU's per-block limit).
// INVALID when the block cannot run on the GPU at all, saying which
// resource it exceeds.
[[nodiscard]] Result<Occupancy> occupancy(const GpuSpec& gpu, const EntryResources& entry,
                                          int threads_per_block,
                                          std::size_t dynamic_shared_bytes = 0);

}  // namespace convjit::analysis
