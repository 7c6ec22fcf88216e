// The problem of a descriptor written as `convjit describe` flags, so that
// any name or log line can be pasted back into the CLI.
#pragma once

#include <string>

#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit {

// e.g. "conv --x 32,3,224,224 --x-strides ... --op fwd".  A symbolic-batch
// descriptor is written with batch 1 and --symbolic-batch.
[[nodiscard]] std::string descriptor_flags(const OpDescriptor& desc);

}  // namespace convjit
