// TMA copies (cp.async.bulk.tensor, common/tma.cuh) in the emulator, as
// the running thread issues them.  Each is checked as the GPU requires:
//   - the map is one the launch set, in the instruction's mode;
//   - the shared address is 128-byte aligned, and the box lies within its
//     array, which a swizzle needs aligned to its repeat (the pattern
//     follows the absolute address);
//   - a multicast load's blocks are in the cluster, and their barriers'
//     inits were made visible to it (BlockScheduler::check_remote);
//   - a load's destination is not read or written by anyone until it has
//     landed (the mbarrier phase it completes on), nor still read by a TMA
//     store; a store's source was written before it with the writers'
//     fence.proxy.async, and is not written again before the store's
//     wait_group.read.
// A load reads global memory when issued and lands late (BlockScheduler);
// a store writes global memory when issued, skipping out-of-bounds elements.
#pragma once

#include <span>

#include "dispatcher/backends/emulator/emulated_tensor_maps.hpp"
#include "dispatcher/backends/emulator/mbarrier_table.hpp"

namespace convjit::emulator {

class SharedRegion;

struct BulkTensorCopy {
  const EmulatedTensorMap* map = nullptr;
  TensorMapMode mode = TensorMapMode::tiled;
  SharedRegion* region = nullptr;  // the shared side: its array and element
  long long index = 0;
  std::span<const int> coords;
  std::span<const int> offsets;  // im2col loads only
};

// Reported, and not issued, when a check fails.  A `multicast` mask
// (.multicast::cluster) lands the box in each masked block of the cluster,
// at the same element of its copy of the array, and completes its bytes on
// that block's copy of `bar`; 0 lands it in the issuing block alone.
void issue_bulk_tensor_load(const BulkTensorCopy& copy, const MbarrierKey& bar,
                            unsigned multicast = 0);
void issue_bulk_tensor_store(const BulkTensorCopy& copy);

}  // namespace convjit::emulator
