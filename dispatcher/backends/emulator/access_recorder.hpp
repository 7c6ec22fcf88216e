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

  std::uint64_t mma_ = 0;
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

}  // namespace convjit::emulator
