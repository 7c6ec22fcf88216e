// GPU architecture names as NVRTC's --gpu-architecture takes them.
#pragma once

#include <string>

namespace convjit {

// "sm_80", "sm_90a", "sm_100f": a real architecture (not compute_XX).
[[nodiscard]] bool is_valid_arch(const std::string& arch);

// The compute capability as a number: 90 for "sm_90a", 75 for "sm_75"; 0
// when `arch` is not valid.
[[nodiscard]] int arch_number(const std::string& arch);

// The architecture-specific target of `arch` ("sm_90" -> "sm_90a"), which
// wgmma and setmaxnreg need: its code runs on that architecture only.
[[nodiscard]] std::string arch_specific(const std::string& arch);

}  // namespace convjit
