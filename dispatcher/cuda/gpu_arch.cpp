#include "dispatcher/cuda/gpu_arch.hpp"

#include <regex>

namespace convjit {

bool is_valid_arch(const std::string& arch) {
  static const std::regex pattern(R"(sm_[1-9][0-9]{1,2}[af]?)");
  return std::regex_match(arch, pattern);
}

int arch_number(const std::string& arch) {
  if (!is_valid_arch(arch)) return 0;
  int number = 0;
  for (const char c : arch.substr(3))
    if (c >= '0' && c <= '9') number = number * 10 + (c - '0');
  return number;
}

std::string arch_specific(const std::string& arch) {
  const bool suffixed = !arch.empty() && (arch.back() == 'a' || arch.back() == 'f');
  return (suffixed ? arch.substr(0, arch.size() - 1) : arch) + "a";
}

}  // namespace convjit
