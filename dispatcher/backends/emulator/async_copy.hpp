// cp.async in the emulator: one thread's copies from global to shared
// memory in flight, by group.  A copy reads its source when issued and
// lands in shared memory only when a cp.async.wait_group covers its group,
// so the destination cannot be read early, or written, without a report
// (SharedRegion marks it in flight meanwhile).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace convjit::emulator {

class SharedRegion;

struct PendingCopy {
  SharedRegion* region = nullptr;
  long long first = 0;  // element index in the region
  long long count = 0;  // elements
  std::array<std::byte, 16> data{};
  std::uint64_t group = 0;
};

class AsyncCopies {
 public:
  // Joins the open group, which cp.async.commit_group closes.
  void issue(const PendingCopy& copy) {
    copies_.push_back(copy);
    copies_.back().group = open_group_;
  }
  void commit() { ++open_group_; }
  // cp.async.wait_group `newest`: removes and returns the copies of every
  // committed group but the `newest` most recent ones.  The open group is
  // not waited for, as in PTX.
  [[nodiscard]] std::vector<PendingCopy> take_landing(unsigned newest) {
    std::vector<PendingCopy> landing, staying;
    for (const PendingCopy& c : copies_)
      (c.group + newest < open_group_ ? landing : staying).push_back(c);
    copies_ = std::move(staying);
    return landing;
  }
  [[nodiscard]] std::size_t in_flight() const { return copies_.size(); }
  void clear() { copies_.clear(), open_group_ = 0; }

 private:
  std::vector<PendingCopy> copies_;
  std::uint64_t open_group_ = 0;
};

}  // namespace convjit::emulator
