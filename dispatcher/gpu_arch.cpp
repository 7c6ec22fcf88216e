#include "gpu_arch.hpp"

#include <regex>

namespace convjit {

bool is_valid_arch(const std::string& arch) {
  static const std::regex pattern(R"(sm_[1-9][0-9]{1,2}[af]?)");
  return std::regex_match(arch, pattern);
}

}  // namespace convjit
