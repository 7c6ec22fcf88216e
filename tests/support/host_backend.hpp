// Test helper: the backend `auto` serves the host with when no tuned
// library applies: oneDNN where it loads, else the reference.
#pragma once

#include <string>

#include "dispatcher/backends/onednn/onednn_library.hpp"

namespace convjit::test {

inline std::string host_backend() {
  return OnednnLibrary::instance().available().is_ok() ? "onednn" : "reference";
}

}  // namespace convjit::test
