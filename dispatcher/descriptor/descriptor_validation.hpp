// Validation of an OpDescriptor: every check names the field at fault and
// says how to fix it.  A descriptor that passes can be computed without
// overflow, out-of-range access or self-overlapping writes.
#pragma once

#include "convjit/status.hpp"
#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/descriptor/output_shape.hpp"

namespace convjit {

// What the three tensor slots are called for this op ("dx" for bwddata...).
struct SlotNames {
  const char* x;
  const char* w;
  const char* y;
};
[[nodiscard]] SlotNames slot_names(const OpDescriptor& desc);

// The y-slot dims implied by the x slot and the parameters.  Pools accept
// either rounding; convolutions always floor.
[[nodiscard]] Dims5 implied_y_dims(const OpDescriptor& desc, Rounding rounding);

[[nodiscard]] Status validate_descriptor(const OpDescriptor& desc);

}  // namespace convjit
