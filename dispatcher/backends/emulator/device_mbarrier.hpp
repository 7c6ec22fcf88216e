// The emulator's side of common/mbarrier.cuh: each operation on the
// mbarrier object at a shared element, through the block scheduler (its
// state, waits and ordering) and the memory counters (as an atomic access
// of 8 bytes).  Included by device_runtime.hpp.
#pragma once

#include "dispatcher/backends/emulator/access_recorder.hpp"
#include "dispatcher/backends/emulator/block_scheduler.hpp"

namespace convjit::emulated::mbarrier_ops {

// A barrier's shared element, bounds-checked and not in flight; null key
// region (after a report) when it is neither.
template <class Address>
emulator::MbarrierKey key_of(Address bar) {
  static_assert(sizeof(*bar.atomic_element()) == 8, "an mbarrier object is 64 bits");
  emulator::note_shared_access(bar.region(), bar.index(), 8, emulator::MemoryOp::atomic);
  if (bar.atomic_element() == nullptr) return {};
  return {&bar.region(), bar.index()};
}

inline emulator::BlockScheduler& block() { return emulator::BlockScheduler::current(); }

template <class Address>
void init(Address bar, unsigned count) {
  if (const auto key = key_of(bar); key.region) block().mbarrier_init(key, count);
}

template <class Address>
void inval(Address bar) {
  if (const auto key = key_of(bar); key.region) block().mbarrier_inval(key);
}

// arrive.expect_tx when `tx_bytes` > 0: the bytes are expected before the
// arrival counts, as the ISA orders them.
template <class Address>
unsigned long long arrive(Address bar, unsigned tx_bytes) {
  const auto key = key_of(bar);
  if (!key.region) return 0;
  if (tx_bytes > 0 && !block().mbarriers().expect_tx(key, tx_bytes)) return 0;
  return block().mbarrier_arrive(key, 1);
}

// mbarrier.arrive.release.cluster.shared::cluster: an arrival on a
// barrier of another block of the cluster (cluster_ops::map's address).
template <class Address>
unsigned long long arrive_cluster(Address bar) {
  const auto key = key_of(bar);
  return key.region == nullptr ? 0 : block().mbarrier_arrive_cluster(key);
}

template <class Address>
void expect_tx(Address bar, unsigned bytes) {
  if (const auto key = key_of(bar); key.region) (void)block().mbarriers().expect_tx(key, bytes);
}

template <class Address>
void complete_tx(Address bar, unsigned bytes) {
  if (const auto key = key_of(bar); key.region) (void)block().mbarriers().complete_tx(key, bytes);
}

// Suspends until the phase of `parity` completes (the GPU's try_wait may
// return false first; callers loop, so suspending is one of its outcomes).
template <class Address>
bool try_wait_parity(Address bar, unsigned parity) {
  const auto key = key_of(bar);
  return key.region == nullptr || block().mbarrier_wait(key, parity);  // reported if null
}

}  // namespace convjit::emulated::mbarrier_ops
