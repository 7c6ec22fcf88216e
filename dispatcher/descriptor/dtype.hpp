// Element types convjit computes with, their sizes and their names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "convjit/convjit.h"

namespace convjit {

enum class DataType : std::int32_t {
  f32 = CONVJIT_DTYPE_F32,
  f16 = CONVJIT_DTYPE_F16,
  bf16 = CONVJIT_DTYPE_BF16,
  f64 = CONVJIT_DTYPE_F64,
};

[[nodiscard]] std::size_t element_size(DataType dtype);
[[nodiscard]] std::string_view dtype_name(DataType dtype);
[[nodiscard]] std::optional<DataType> parse_dtype(std::string_view name);
[[nodiscard]] bool is_valid_dtype(int raw);

}  // namespace convjit
