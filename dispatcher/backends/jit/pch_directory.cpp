#include "dispatcher/backends/jit/pch_directory.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <mutex>
#include <set>

namespace convjit {

namespace {

namespace fs = std::filesystem;

// A process that exists, ours or another user's (EPERM).
bool process_exists(long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM; }

// Removes the per-process folders under `root` whose process is gone.
void remove_stale(const fs::path& root) {
  std::error_code error;
  for (fs::directory_iterator it(root, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    long pid = 0;
    const auto [end_of_number, parsed] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (parsed != std::errc() || end_of_number != name.data() + name.size() || pid <= 0) continue;
    std::error_code ignored;
    if (!process_exists(pid)) fs::remove_all(it->path(), ignored);
  }
}

}  // namespace

std::string pch_directory(const std::string& cache_dir) {
  if (cache_dir.empty()) return {};
  const fs::path root = fs::path(cache_dir) / "jit" / "pch";
  static std::mutex mutex;
  static std::set<std::string> cleaned;  // cache directories already swept by this process
  {
    std::lock_guard lock(mutex);
    if (cleaned.insert(root.string()).second) remove_stale(root);
  }
  const fs::path mine = root / std::to_string(::getpid());
  std::error_code error;
  fs::create_directories(mine, error);
  if (error) return {};
  ::chmod(mine.c_str(), 0700);
  return mine.string();
}

}  // namespace convjit
