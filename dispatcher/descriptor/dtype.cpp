#include "dispatcher/descriptor/dtype.hpp"

#include <array>

namespace convjit {

namespace {
struct DTypeInfo {
  DataType dtype;
  std::string_view name;
  std::size_t size;
};
constexpr std::array<DTypeInfo, 4> kDTypes{{
    {DataType::f32, "f32", 4},
    {DataType::f16, "f16", 2},
    {DataType::bf16, "bf16", 2},
    {DataType::f64, "f64", 8},
}};

const DTypeInfo& info(DataType dtype) {
  for (const auto& entry : kDTypes)
    if (entry.dtype == dtype) return entry;
  return kDTypes[0];
}
}  // namespace

std::size_t element_size(DataType dtype) { return info(dtype).size; }
std::string_view dtype_name(DataType dtype) { return info(dtype).name; }

std::optional<DataType> parse_dtype(std::string_view name) {
  for (const auto& entry : kDTypes)
    if (entry.name == name) return entry.dtype;
  return std::nullopt;
}

bool is_valid_dtype(int raw) {
  for (const auto& entry : kDTypes)
    if (static_cast<int>(entry.dtype) == raw) return true;
  return false;
}

}  // namespace convjit
