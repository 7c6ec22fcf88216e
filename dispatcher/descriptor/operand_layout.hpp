// Which tensor slots an operation reads and writes, how many bytes each
// spans, and element access in any dtype: the one place that knows an
// op's operand roles (op_descriptor.hpp lists the slots).
#pragma once

#include <cstddef>

#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit {

enum class Slot { x, w, y };

// The slot the op writes: y (fwd), x (conv bwddata, every other bwd), w (conv
// bwdfilt), or y for the bias gradient, whose db holds y's K channels.
[[nodiscard]] Slot output_slot(const OpDescriptor& desc);

// A slot's dims and strides in the descriptor.
[[nodiscard]] const Dims5& slot_dims(const OpDescriptor& desc, Slot slot);
[[nodiscard]] const Dims5& slot_strides(const OpDescriptor& desc, Slot slot);

// True if the op reads `slot` (as x, w or dy); average-pool bwd reads no x.
[[nodiscard]] bool reads_slot(const OpDescriptor& desc, Slot slot);

// Bytes from a slot's first element to its last, inclusive (0 if unused).
[[nodiscard]] std::size_t slot_bytes(const OpDescriptor& desc, Slot slot);

// Bytes the op's output spans (db: K elements).
[[nodiscard]] std::size_t output_bytes(const OpDescriptor& desc);

// Element `index` of a buffer of `dtype`, widened to double, and back.
[[nodiscard]] double load_element(const void* data, std::size_t index, DataType dtype);
void store_element(void* data, std::size_t index, DataType dtype, double value);

}  // namespace convjit
