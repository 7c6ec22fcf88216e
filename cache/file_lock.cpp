#include "cache/file_lock.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

namespace convjit {

namespace {

std::atomic<FlockFunction> g_flock{nullptr};

int call_flock(int fd, int operation) {
  const FlockFunction stand_in = g_flock.load(std::memory_order_relaxed);
  return stand_in != nullptr ? stand_in(fd, operation) : ::flock(fd, operation);
}

std::string errno_text(const char* what, int error) {
  const char* name = error == ENOSYS       ? " (ENOSYS)"
                     : error == ENOLCK     ? " (ENOLCK)"
                     : error == EOPNOTSUPP ? " (EOPNOTSUPP)"
                                           : "";
  return fmt::format("{}: {}{}", what, std::strerror(error), name);
}

}  // namespace

void set_flock_for_testing(FlockFunction flock) { g_flock.store(flock); }

FileLock::FileLock(const std::string& path, std::chrono::milliseconds timeout) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    problem_ = errno_text(fmt::format("cannot open the lock file {}", path).c_str(), errno);
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (call_flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    if (error == EINTR) continue;
    // Only "someone else holds it" is worth waiting for; any other failure
    // (ENOSYS, ENOLCK, EOPNOTSUPP, EINVAL, ...) will not go away by waiting.
    if (error != EWOULDBLOCK) {
      state_ = LockState::unsupported;
      problem_ = errno_text("flock", error);
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      state_ = LockState::timed_out;
      problem_ = fmt::format("another process held {} for more than {} ms", path, timeout.count());
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  state_ = LockState::held;
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);  // also releases the lock
}

}  // namespace convjit
