#include "dispatcher/backends/tuned/tuned_kernel_common.hpp"

#include <fmt/format.h>

#include "dispatcher/kernel_workspace.hpp"

namespace convjit {

TunedWorkspace::TunedWorkspace(std::size_t needed, const convjit_device_t& device)
    : needed_(needed) {
  if (needed_ > 0 && device.kind == CONVJIT_DEVICE_HOST) owned_.resize(needed_);
}

Result<void*> TunedWorkspace::for_call(const ExecArgs& args, const std::string& library) {
  if (needed_ == 0) return static_cast<void*>(nullptr);
  auto given = caller_workspace(args, needed_, library);
  if (!given.is_ok() || given.value() != nullptr) return given;
  if (owned_.empty())
    return Status::not_available(
        fmt::format("{} needs {} bytes of device workspace; pass one in "
                    "convjit_exec_t",
                    library, needed_));
  return static_cast<void*>(owned_.data());
}

TunedKernel::~TunedKernel() {
  unregister_release_at_exit(this);
  release();
}

void TunedKernel::release() noexcept {
  std::lock_guard lock(call_mutex_);
  if (released_.exchange(true)) return;
  if (shut_down_) shut_down_();
  library_.close();
}

}  // namespace convjit
