#include "dispatcher/observe/warnings.hpp"

#include <cstdio>
#include <mutex>
#include <unordered_set>

namespace convjit {

void warn(const std::string& message) {
  std::fprintf(stderr, "convjit: warning: %s\n", message.c_str());
}

void warn_once(const std::string& message) {
  static std::mutex mutex;
  static std::unordered_set<std::string> warned;
  std::lock_guard lock(mutex);
  if (warned.insert(message).second) warn(message);
}

}  // namespace convjit
