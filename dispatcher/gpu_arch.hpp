// GPU architecture names as NVRTC's --gpu-architecture takes them.
#pragma once

#include <string>

namespace convjit {

// "sm_80", "sm_90a", "sm_100f": a real architecture (not compute_XX).
[[nodiscard]] bool is_valid_arch(const std::string& arch);

}  // namespace convjit
