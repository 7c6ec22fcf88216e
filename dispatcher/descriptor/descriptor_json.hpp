// A descriptor as a JSON object: names, op fields and the CLI flags.  Used
// by miss recording and by the CLI's --json output.
#pragma once

#include <nlohmann/json.hpp>

#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit {

[[nodiscard]] nlohmann::json descriptor_json(const OpDescriptor& desc);

}  // namespace convjit
