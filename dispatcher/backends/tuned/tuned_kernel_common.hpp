// Pieces shared by the kernels of both tuned-library ABIs.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "dispatcher/backend.hpp"
#include "dispatcher/backends/tuned/library_lifetime.hpp"
#include "dispatcher/backends/tuned/shared_library.hpp"

namespace convjit {

// Where a tuned library was found and under which of its names.
struct TunedCandidate {
  std::string path;
  std::string name;       // the descriptor name in the file name
  bool symbolic = false;  // found under the symbolic-batch name
};

// Scratch memory a library asked for: the caller's, checked, or else the
// kernel's own, allocated once when the kernel is built.
class TunedWorkspace {
 public:
  TunedWorkspace() = default;
  TunedWorkspace(std::size_t needed, const convjit_device_t& device);

  [[nodiscard]] std::size_t needed() const { return needed_; }
  // The memory to pass for this call, or an error naming both sizes.
  [[nodiscard]] Result<void*> for_call(const ExecArgs& args, const std::string& library);

 private:
  std::size_t needed_ = 0;
  std::vector<std::byte> owned_;
};

// Base of tuned kernels: owns the library, serialises calls into it (its
// state is not assumed thread-safe) and takes part in orderly exit.
class TunedKernel : public Kernel, public ReleasableAtExit {
 public:
  explicit TunedKernel(SharedLibrary library) : library_(std::move(library)) {}
  ~TunedKernel() override;

  void release() noexcept final;

 protected:
  // Call from the derived constructor once the library is initialised.
  // `shut_down` (DaCe's exit, say) runs once before the library unloads; it
  // captures what it needs by value, as it may run from this base's
  // destructor after the derived part is gone.
  void enable_release_at_exit(std::function<void()> shut_down) {
    shut_down_ = std::move(shut_down);
    register_release_at_exit(this);
  }

  [[nodiscard]] bool released() const { return released_.load(std::memory_order_acquire); }

  SharedLibrary library_;
  std::function<void()> shut_down_;
  mutable std::mutex call_mutex_;  // per kernel, never global
  std::atomic<bool> released_{false};
};

}  // namespace convjit
