// Counts the memory traffic of the blocks an emulated kernel runs while a
// recorder is attached to the block scheduler (kernel_emulator.hpp's
// count_memory): device_runtime.hpp reports each lane's global and shared
// accesses here, and the recorder rebuilds the warp-level instructions they
// were part of.
//
// The emulator runs a warp's lanes one after another, so a lane's accesses
// are matched to its warp's by order: the k-th access of a lane to one site
// (memory_counters.hpp's AccessSite) between two barriers belongs to the
// warp's k-th instruction there.  That is the GPU's own grouping for code
// whose lanes run a site equally often between barriers, as the kernels'
// loaders do (a cp.async with nothing to copy still issues); a lane that
// skips an access its warp makes, and makes the next, is counted in the
// wrong instance.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dispatcher/backends/emulator/memory_counters.hpp"

namespace convjit::emulator {

class SharedRegion;

class AccessRecorder {
 public:
  // One lane's access.
  void record(unsigned thread, const AccessSite& site, std::int64_t offset);
  // A warp's mma.sync, once per warp.
  void count_mma() { ++mma_; }
  // A warpgroup's wgmma, once per warpgroup, as `equivalents` mma.syncs.
  void count_wgmma(std::uint64_t equivalents) { wgmma_equivalents_ += equivalents; }
  // One TMA copy of global buffer `object`: the bytes of the box inside the
  // tensor, at `offsets` (each element's, from the buffer's start).
  void record_bulk(std::uint32_t object, MemoryOp op, std::size_t element_bytes,
                   std::span<const std::int64_t> offsets);
  // Whether a buffer or shared array has its name yet; name() gives it.
  [[nodiscard]] bool named(MemorySpace space, std::uint32_t object) const;
  void name(MemorySpace space, std::uint32_t object, std::string name);
  // A global buffer's size, for the footprint's bound.
  void note_buffer(std::uint32_t object, const std::string& name, std::int64_t bytes);
  // Groups the accesses since the last barrier into warp instructions and
  // counts them.
  void end_interval();

  // The counts so far, each multiplied by `scale`; the footprint of a
  // buffer at most its size.
  [[nodiscard]] KernelMemoryCounters counters(double scale) const;

 private:
  struct Access {
    unsigned warp;
    unsigned lane;
    AccessSite site;
    std::int64_t offset;
  };
  struct Totals {
    std::uint64_t instructions = 0, cost = 0, ideal = 0;
  };
  struct Buffer {
    std::string name;
    std::int64_t bytes = 0;
    std::unordered_set<std::int64_t> sectors;
  };
  void count(const AccessSite& site, const std::vector<LaneAccess>& lanes);

  std::uint64_t mma_ = 0, wgmma_equivalents_ = 0;
  std::vector<Access> pending_;  // this barrier interval's, in the order lanes ran
  std::map<AccessSite, Totals> sites_;
  std::map<std::uint32_t, Buffer> buffers_;
  std::map<std::pair<MemorySpace, std::uint32_t>, std::string> names_;
};

// Called by device_runtime.hpp on every access: no-ops unless the running
// block has a recorder.
void note_global_access(const void* address, std::size_t bytes, MemoryOp op);
void note_shared_access(const SharedRegion& region, long long element, std::size_t bytes,
                        MemoryOp op, unsigned shape = 0);
// Called by every lane of a warp's mma.sync.
void note_mma();
// Called by every thread of a warpgroup's wgmma m64nNk16 (K = 8 for tf32).
void note_wgmma(unsigned n, unsigned k);
// Called for each TMA copy, with the global address of each of its box's
// elements (null where the box leaves the tensor).
void note_bulk_global_access(std::span<const std::byte* const> elements,
                             std::size_t element_bytes, MemoryOp op);

}  // namespace convjit::emulator
