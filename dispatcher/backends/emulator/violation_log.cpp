#include "dispatcher/backends/emulator/violation_log.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace convjit::emulator {

void ViolationLog::report(std::string message, long long order) {
  count_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(mutex_);
  const auto at = std::upper_bound(messages_.begin(), messages_.end(), order,
                                   [](long long o, const auto& kept) { return o < kept.first; });
  if (at == messages_.end() && messages_.size() == kKeptMessages) return;
  messages_.emplace(at, order, std::move(message));
  if (messages_.size() > kKeptMessages) messages_.pop_back();
}

std::vector<std::string> ViolationLog::messages() const {
  std::lock_guard lock(mutex_);
  std::vector<std::string> out;
  for (const auto& [order, message] : messages_) out.push_back(message);
  return out;
}

std::string ViolationLog::summary() const {
  const std::size_t n = count();
  if (n == 0) return {};
  const auto kept = messages();
  return fmt::format("{} violation{}: {}{}", n, n == 1 ? "" : "s", fmt::join(kept, "; "),
                     n > kept.size() ? fmt::format("; and {} more", n - kept.size()) : "");
}

}  // namespace convjit::emulator
