// Function pointers from libraries convjit loads at run time (the CUDA
// driver, cuDNN): each API table entry is looked up by the symbol's name.
#pragma once

#include <dlfcn.h>

#include <utility>

namespace convjit {

// Points `target` at `name` in `library`; false if the library lacks it.
template <class Fn>
bool load_symbol(void* library, const char* name, Fn& target) {
  target = reinterpret_cast<Fn>(::dlsym(library, name));
  return target != nullptr;
}

// {"symbol", found} for an API table's member `field`, so a table lists
// each symbol's name once.
#define CONVJIT_LOAD_SYMBOL(library, api, field, symbol) \
  std::pair<const char*, bool> { #symbol, ::convjit::load_symbol(library, #symbol, (api).field) }

}  // namespace convjit
