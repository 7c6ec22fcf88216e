// The emulator's side of common/tma.cuh: each TMA copy through
// bulk_tensor_copy.hpp, its mbarrier through device_mbarrier.hpp's checks.
// Included by device_runtime.hpp.
#pragma once

#include <span>

#include "dispatcher/backends/emulator/block_scheduler.hpp"
#include "dispatcher/backends/emulator/bulk_tensor_copy.hpp"
#include "dispatcher/backends/emulator/device_mbarrier.hpp"

namespace convjit::emulated::tma_ops {

// A `multicast` mask (.multicast::cluster) lands the box at the same
// element of each masked block's array, completing on each one's barrier
// at `bar`'s element.
template <class T, class Barrier, std::size_t Rank>
void load(TensorMapMode mode, SharedAddress<T> dst, const emulator::EmulatedTensorMap& map,
          Barrier bar, const int (&coords)[Rank], std::span<const int> offsets,
          unsigned short multicast = 0) {
  const emulator::MbarrierKey key = mbarrier_ops::key_of(bar);
  if (key.region == nullptr) return;  // reported
  emulator::issue_bulk_tensor_load({&map, mode, &dst.region(), dst.index(), coords, offsets}, key,
                                   multicast);
}

template <class T, std::size_t Rank>
void store(const emulator::EmulatedTensorMap& map, SharedAddress<T> src,
           const int (&coords)[Rank]) {
  emulator::issue_bulk_tensor_store(
      {&map, TensorMapMode::tiled, &src.region(), src.index(), coords, {}});
}

inline void commit() { ++emulator::BlockScheduler::current().bulk_stores().open_group; }
// The emulator's stores write global memory when issued: waiting for the
// reads is waiting for all.
inline void wait(unsigned newest) { emulator::BlockScheduler::current().wait_bulk_stores(newest); }
inline void fence_proxy_async() { emulator::BlockScheduler::current().fence_proxy_async(); }

}  // namespace convjit::emulated::tma_ops
