// A failed call into a library convjit loads at run time (the CUDA driver,
// NVRTC, cuDNN, oneDNN), as one Status format for all of them:
// "<call> failed: <the library's own text> (<its code>)".
#pragma once

#include <fmt/format.h>

#include "convjit/status.hpp"

namespace convjit {

// `text` is the library's description of `result`, or null when it has none.
[[nodiscard]] inline Status failed_library_call(convjit_status_t code, const char* call,
                                                const char* text, int result) {
  return Status(code, fmt::format("{} failed: {} ({})", call, text ? text : "unknown error", result));
}

}  // namespace convjit
