#include "dispatcher/backends/emulator/emulated_template.hpp"

namespace convjit::emulator {

const EmulatedTemplate* find_emulated_template(std::span<const EmulatedTemplate* const> templates,
                                               std::string_view template_name, DataType dtype,
                                               std::string_view variant) {
  for (const EmulatedTemplate* t : templates)
    if (t->dtype == dtype && template_name == t->template_name && variant == t->variant)
      return t;
  return nullptr;
}

}  // namespace convjit::emulator
