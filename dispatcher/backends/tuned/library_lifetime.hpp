// Orderly unloading of tuned libraries at process exit.  A library may
// depend on runtimes (the CUDA runtime, say) that tear themselves down in
// their own atexit handlers; calling its exit function from a static
// destructor afterwards would use a dead runtime.  So every live kernel is
// released from an atexit handler registered *after* the library was loaded
// and initialised, which therefore runs before any handler the library or
// its runtimes registered.
#pragma once

namespace convjit {

class ReleasableAtExit {
 public:
  virtual ~ReleasableAtExit() = default;
  // Calls the library's exit function and unloads it; idempotent.
  virtual void release() noexcept = 0;
};

// Registers a live object (and a fresh atexit handler); unregister before
// destroying it.
void register_release_at_exit(ReleasableAtExit* object);
void unregister_release_at_exit(ReleasableAtExit* object);

}  // namespace convjit
