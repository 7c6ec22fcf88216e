// The per-key advisory lock one process holds while it compiles a JIT cache
// entry, so that processes on the same node wait for its publish instead of
// compiling the same kernel.
//
// flock cannot be trusted everywhere: on Lustre without the flock mount
// option it fails with ENOSYS, on some NFS setups with ENOLCK or EOPNOTSUPP,
// and NFS mounted `nolock` turns it into a silent no-op.  So a lock is only
// an optimisation.  When flock fails, or the wait times out, the caller
// compiles without it and publishes by temp file + rename: the worst case
// is a duplicate compile, never a hang or a torn entry.
#pragma once

#include <chrono>
#include <string>

namespace convjit {

enum class LockState {
  held,         // this process holds the lock
  timed_out,    // another process held it for longer than the timeout
  unsupported,  // flock fails here (ENOSYS, ENOLCK, EOPNOTSUPP, ...): lock-free
  unavailable,  // the lock file cannot be opened (read-only or vanished directory)
};

class FileLock {
 public:
  FileLock(const std::string& path, std::chrono::milliseconds timeout);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  [[nodiscard]] LockState state() const { return state_; }
  [[nodiscard]] bool held() const { return state_ == LockState::held; }
  // Why the lock is not held ("flock: Function not implemented (ENOSYS)");
  // empty when it is.
  [[nodiscard]] const std::string& problem() const { return problem_; }

 private:
  int fd_ = -1;
  LockState state_ = LockState::unavailable;
  std::string problem_;
};

// The flock FileLock calls: ::flock, or a test's stand-in that fails the way
// a filesystem does.  nullptr restores ::flock.  Not for production use.
using FlockFunction = int (*)(int fd, int operation);
void set_flock_for_testing(FlockFunction flock);

}  // namespace convjit
