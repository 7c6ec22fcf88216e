// Tuned libraries in LBANN's DaCe ABI, exactly as existing LBANN kernels
// export it (README: "Tuned-library ABI").  Convolutions in f32 only.
#pragma once

#include <memory>

#include "dispatcher/backends/tuned/tuned_kernel_common.hpp"

namespace convjit {

// True if the library exports the DaCe entry point.
[[nodiscard]] bool has_dace_abi(const SharedLibrary& library);

// Checks the symbols, initialises the library (with B for a symbolic one)
// and sizes its workspace.  A rejection says why in one line.
[[nodiscard]] Result<std::unique_ptr<Kernel>> make_dace_kernel(SharedLibrary library,
                                                               const TunedCandidate& candidate,
                                                               const OpDescriptor& desc,
                                                               const convjit_device_t& device);

}  // namespace convjit
