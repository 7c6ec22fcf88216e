#include "dispatcher/packed_filter_copies.hpp"

namespace convjit {

std::size_t PackedFilterCopies::index_of(const void* workspace) const {
  for (std::size_t i = 0; i < records_.size(); ++i) {
    const void* claimed = records_[i].workspace.load(std::memory_order_acquire);
    if (claimed == workspace) return i;
    if (claimed == nullptr) break;  // records are claimed in order
  }
  return records_.size();
}

bool PackedFilterCopies::holds(const void* workspace, bool owned, const void* w,
                               std::uint64_t version) const {
  if (!owned || version == 0 || workspace == nullptr) return false;
  const std::size_t i = index_of(workspace);
  return i < records_.size() && records_[i].version.load(std::memory_order_relaxed) == version &&
         records_[i].w.load(std::memory_order_relaxed) == w;
}

void PackedFilterCopies::record(const void* workspace, bool owned, const void* w,
                                std::uint64_t version) {
  if (!owned || workspace == nullptr) return;
  std::size_t i = index_of(workspace);
  for (std::size_t free = 0; i == records_.size() && free < records_.size(); ++free) {
    const void* expected = nullptr;
    if (records_[free].workspace.compare_exchange_strong(expected, workspace,
                                                         std::memory_order_acq_rel) ||
        expected == workspace)
      i = free;
  }
  if (i == records_.size()) return;  // more workspaces than streams: cannot be; copy every call
  records_[i].w.store(w, std::memory_order_relaxed);
  records_[i].version.store(version, std::memory_order_relaxed);
}

}  // namespace convjit
