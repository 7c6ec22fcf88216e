// Function pointers from libraries convjit loads at run time (the CUDA
// driver, NVRTC, cuDNN, oneDNN): each API table entry is looked up by the symbol's name.
#pragma once

#include <dlfcn.h>

#include <span>
#include <utility>

namespace convjit {

// Points `target` at `name` in `library`; false if the library lacks it.
template <class Fn>
bool load_symbol(void* library, const char* name, Fn& target) {
  target = reinterpret_cast<Fn>(::dlsym(library, name));
  return target != nullptr;
}

// {"symbol", found}: one entry of an API table's lookups.
using SymbolLookup = std::pair<const char*, bool>;

// The lookup for an API table's member `field`, so a table lists each
// symbol's name once.
#define CONVJIT_LOAD_SYMBOL(library, api, field, symbol) \
  ::convjit::SymbolLookup { #symbol, ::convjit::load_symbol(library, #symbol, (api).field) }

// The first symbol the lookups did not find, or nullptr.
[[nodiscard]] inline const char* first_missing(std::span<const SymbolLookup> lookups) {
  for (const auto& [name, found] : lookups)
    if (!found) return name;
  return nullptr;
}

}  // namespace convjit
