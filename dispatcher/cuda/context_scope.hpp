// The context convjit works in, made current for the length of one entry
// point, with the caller's own current context given back on the way out.
//
// A caller may have a context of its own current, or one on another device
// (a trainer that drives two GPUs from one thread); an entry point that
// switched it and left it switched would move that caller's later work to
// convjit's device.  So every entry that touches a context (execute, build,
// a device buffer, a kernel's release) holds a ContextScope, which pushes
// the context onto the thread's stack and pops it again.  Push and pop are
// a few hundred nanoseconds and allocate nothing.
#pragma once

#include <cuda.h>

#include "convjit/status.hpp"

namespace convjit {

struct CudaDriverApi;

class ContextScope {
 public:
  // Pushes `context` with `api` (the process's driver, or a test's fake).
  ContextScope(const CudaDriverApi& api, CUcontext context);
  // The same with the process's driver.
  explicit ContextScope(CUcontext context);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

  // OK, or why the push failed; nothing is popped then.
  [[nodiscard]] const Status& status() const { return status_; }

 private:
  const CudaDriverApi& api_;
  Status status_;
};

}  // namespace convjit
