#include "emulator/violation_log.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace convjit::emulator {

void ViolationLog::report(std::string message) {
  if (count_.fetch_add(1, std::memory_order_relaxed) >= kKeptMessages) return;
  std::lock_guard lock(mutex_);
  messages_.push_back(std::move(message));
}

std::vector<std::string> ViolationLog::messages() const {
  std::lock_guard lock(mutex_);
  return messages_;
}

std::string ViolationLog::summary() const {
  const std::size_t n = count();
  if (n == 0) return {};
  const auto kept = messages();
  return fmt::format("{} violation{}: {}{}", n, n == 1 ? "" : "s", fmt::join(kept, "; "),
                     n > kept.size() ? fmt::format("; and {} more", n - kept.size()) : "");
}

}  // namespace convjit::emulator
