// Enum values that come from C callers.
#pragma once

#include <cstring>
#include <type_traits>

namespace convjit {

// The integer a C caller stored in an enum-typed field or parameter, read
// without loading it as the enum type.  C lets any int sit in an enum; C++
// makes loading a value outside the enum's range undefined, so a range
// check written on the loaded value may be compiled away.  Every enum that
// crosses the C API is read through this until it has been checked.
template <class Enum>
  requires std::is_enum_v<Enum>
[[nodiscard]] inline int raw_c_enum(const Enum& value) noexcept {
  static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized on every supported ABI");
  int raw;
  std::memcpy(&raw, &value, sizeof raw);
  return raw;
}

}  // namespace convjit
