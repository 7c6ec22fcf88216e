// AddressSanitizer tracks one stack per host thread.  The emulator switches
// between fiber stacks behind its back (Boost.Context's fcontext switches
// do not announce themselves), which ASan would take for wild stack
// accesses; these calls tell it of each switch.  They compile to nothing
// outside an ASan build.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#endif

namespace convjit::emulator {

struct StackBounds {
  const void* bottom = nullptr;  // lowest address
  std::size_t size = 0;
};

// Just before switching to the stack `to`.  `fake_stack` keeps the
// leaving stack's use-after-return state until it runs again; nullptr when
// the leaving fiber has finished and will never run again.
inline void announce_stack_switch([[maybe_unused]] void** fake_stack,
                                  [[maybe_unused]] StackBounds to) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_start_switch_fiber(fake_stack, to.bottom, to.size);
#endif
}

// First thing after arriving on a stack: restores its `fake_stack` (nullptr
// on a fiber's first run) and, if `from` is given, records the bounds of
// the stack just left.
inline void complete_stack_switch([[maybe_unused]] void* fake_stack,
                                  [[maybe_unused]] StackBounds* from = nullptr) {
#if defined(__SANITIZE_ADDRESS__)
  __sanitizer_finish_switch_fiber(fake_stack, from ? &from->bottom : nullptr,
                                  from ? &from->size : nullptr);
#endif
}

}  // namespace convjit::emulator
