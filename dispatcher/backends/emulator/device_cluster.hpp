// The emulator's side of common/cluster.cuh: a block's rank in its
// cluster, barrier.cluster, and mapa (another block's copy of a shared
// array), through the block scheduler, which runs the cluster's blocks
// together.  Included by device_runtime.hpp.
#pragma once

#include "dispatcher/backends/emulator/block_scheduler.hpp"

namespace convjit::emulated::cluster_ops {

inline emulator::BlockScheduler& cluster() { return emulator::BlockScheduler::current(); }

inline unsigned rank() { return cluster().running_rank(); }
inline unsigned blocks() { return cluster().cluster_blocks(); }
inline void sync() { cluster().cluster_barrier(); }

// The same element of block `rank`'s array.  A bad rank (reported) maps
// to the running block's own, so that the kernel runs on to its end.
template <class T>
SharedAddress<T> map(SharedAddress<T> address, unsigned rank) {
  emulator::SharedRegion* peer = cluster().peer_region(address.region(), rank);
  return {peer != nullptr ? peer : &address.region(), address.index()};
}

// ld.shared::cluster of `bytes` into `words` at `address`, another block's
// array (map's address) or the running block's own.
template <class T>
void load(SharedAddress<T> address, std::size_t bytes, unsigned* words) {
  if (!cluster().check_remote_read(address.region())) {
    std::memset(words, 0xff, bytes);
    return;
  }
  vector_load(address, bytes, words);
}

}  // namespace convjit::emulated::cluster_ops
