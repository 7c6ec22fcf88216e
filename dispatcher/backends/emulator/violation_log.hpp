// What the emulator found wrong in one launch: out-of-bounds and
// read-only accesses, races, barrier divergence, unwritten outputs.  Each
// message names the template, the kernel, the block and thread, and the
// buffer and element at fault.
#pragma once

#include <atomic>
#include <cstddef>
#include <limits>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace convjit::emulator {

class ViolationLog {
 public:
  // This many messages are kept, those of the lowest `order` (the global
  // thread index), so a report does not depend on how blocks were
  // scheduled; the rest are counted.
  static constexpr std::size_t kKeptMessages = 8;
  static constexpr long long kAfterEveryThread = std::numeric_limits<long long>::max();

  void report(std::string message, long long order = kAfterEveryThread);
  [[nodiscard]] std::size_t count() const { return count_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::vector<std::string> messages() const;
  // "N violations: first; second; ..." or empty when clean.
  [[nodiscard]] std::string summary() const;

 private:
  mutable std::mutex mutex_;  // taken only when something is wrong
  std::vector<std::pair<long long, std::string>> messages_;  // sorted by order
  std::atomic<std::size_t> count_{0};
};

}  // namespace convjit::emulator
