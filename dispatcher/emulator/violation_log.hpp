// What the emulator found wrong in one launch: out-of-bounds and
// read-only accesses, races, barrier divergence, unwritten outputs.  Each
// message names the template, the kernel, the block and thread, and the
// buffer and element at fault.
#pragma once

#include <atomic>
#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace convjit::emulator {

class ViolationLog {
 public:
  // The first this many messages are kept; the rest are counted.
  static constexpr std::size_t kKeptMessages = 8;

  void report(std::string message);
  [[nodiscard]] std::size_t count() const { return count_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::vector<std::string> messages() const;
  // "N violations: first; second; ..." or empty when clean.
  [[nodiscard]] std::string summary() const;

 private:
  mutable std::mutex mutex_;  // taken only when something is wrong
  std::vector<std::string> messages_;
  std::atomic<std::size_t> count_{0};
};

}  // namespace convjit::emulator
