// Tuned libraries in convjit's own ABI (include/convjit/kernel_abi.h).
#pragma once

#include <memory>

#include "dispatcher/backends/tuned/tuned_kernel_common.hpp"

namespace convjit {

[[nodiscard]] bool has_convjit_abi(const SharedLibrary& library);

// Checks the ABI version, that the library implements exactly the name it
// was found under, and its device; then sizes its workspace.
[[nodiscard]] Result<std::unique_ptr<Kernel>> make_convjit_abi_kernel(
    SharedLibrary library, const TunedCandidate& candidate, const OpDescriptor& desc,
    const convjit_device_t& device);

}  // namespace convjit
