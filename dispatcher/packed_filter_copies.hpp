// Which filters each of a kernel's own workspaces holds a packed copy of,
// so that a call that promises w unchanged (convjit_exec_t::w_version)
// skips the kernel's first pass that copies it (KernelEntry::copies_filters).
//
// Only a kernel's own workspace is remembered (kernel_workspace.hpp): a
// caller's may hold anything between calls.  The kernel owns a workspace a
// stream, and calls on one stream run in order, so a workspace's record is
// the record of its stream's last call.  The records take no lock: a
// stream's calls are enqueued one after another (two threads enqueuing one
// kernel on one stream at once would already interleave its passes over
// the one workspace), and the atomics keep the reads of other streams'
// records, when finding one's own, free of races.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "dispatcher/kernel_workspace.hpp"

namespace convjit {

class PackedFilterCopies {
 public:
  // Whether `workspace` holds the copy of `w` at `version`: the kernel's own
  // (`owned`), a nonzero version, and the last copy into it was of this w at
  // this version.
  [[nodiscard]] bool holds(const void* workspace, bool owned, const void* w,
                           std::uint64_t version) const;

  // After a call's copy is enqueued: `workspace` now holds w at `version`
  // (0 forgets it, as does a caller's workspace, which is not recorded).
  void record(const void* workspace, bool owned, const void* w, std::uint64_t version);

 private:
  struct Record {
    std::atomic<const void*> workspace{nullptr};  // set once, when the record is claimed
    std::atomic<const void*> w{nullptr};
    std::atomic<std::uint64_t> version{0};
  };
  // The record of `workspace`, or records_.size() where it has none.
  [[nodiscard]] std::size_t index_of(const void* workspace) const;

  // A kernel owns at most one workspace a stream.
  std::array<Record, StreamWorkspaces::kMaxStreams> records_;
};

}  // namespace convjit
