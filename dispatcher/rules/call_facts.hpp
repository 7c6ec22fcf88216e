// What a rule can see of one call: its descriptor and name, the device and
// its architecture, and the versions of the libraries loaded (the ones that
// would serve it, as loaded, not as compiled against).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "convjit/convjit.h"
#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit::rules {

// A library version as numbers ("9.1.0" is {9, 1, 0}).
using Version = std::vector<int>;

struct CallFacts {
  OpDescriptor desc;
  std::string name;  // the descriptor's name
  convjit_device_t device{CONVJIT_DEVICE_HOST, 0};
  std::string arch;  // "sm_90"; empty on the host
  std::optional<Version> cudnn, onednn, nvrtc;
};

// The facts of a call as the dispatcher sees it.  On a CUDA device without
// a GPU to ask (the emulator, `convjit query`), the arch is CONVJIT_ARCH's.
[[nodiscard]] CallFacts call_facts(const OpDescriptor& desc, const convjit_device_t& device);

// "9.1.0" as a Version; nullopt unless it is dot-separated numbers.
[[nodiscard]] std::optional<Version> parse_version(std::string_view text);

}  // namespace convjit::rules
