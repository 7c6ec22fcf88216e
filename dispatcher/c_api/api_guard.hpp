// What every C API entry point shares: no exception crosses the boundary;
// a failure becomes a status plus the thread's last-error message, and a
// success records the backend that served it.
#pragma once

#include <new>
#include <string>
#include <string_view>

#include "convjit/convjit.h"
#include "convjit/status.hpp"
#include "dispatcher/exec_args.hpp"

namespace convjit {

// The thread's last-error message (convjit_last_error_message).
std::string& last_error_message();
// The backend that served the thread's last successful operation; `name`
// must be a static string (backend names are).
void set_last_backend(std::string_view name);
const char* last_backend();

// Where a call runs: exec's device, or the host for a NULL exec.
inline convjit_device_t device_of(const convjit_exec_t* exec) {
  return exec ? exec->device : convjit_device_t{CONVJIT_DEVICE_HOST, 0};
}

// A call's scaling and exec's stream, workspace and filters' version (none for a NULL exec);
// the operands are the caller's to set.
inline ExecArgs exec_args(const convjit_exec_t* exec, double alpha, double beta) {
  ExecArgs args;
  args.alpha = alpha;
  args.beta = beta;
  if (exec) {
    args.workspace = exec->workspace;
    args.workspace_bytes = exec->workspace_bytes;
    args.stream = exec->stream;
    args.w_version = exec->w_version;
  }
  return args;
}

// Copies `text` into the caller's buffer, as the name functions do: a NULL
// buffer of size 0 asks only for *required (may be NULL), the size with the NUL.
// `what` names the buffer in errors ("name buffer").
[[nodiscard]] Status write_text(const std::string& text, const char* what, char* buf,
                                std::size_t size, std::size_t* required);

// Runs an API body, converting its Status (or an escaping exception) into
// the C status code and the thread's last-error message.
template <class Body>
convjit_status_t guarded(Body&& body) noexcept {
  std::string& error = last_error_message();
  try {
    Status status = body();
    if (!status.is_ok() || !error.empty()) error = status.message();
    return status.code();
  } catch (const std::bad_alloc&) {
    error = "out of host memory";
    return CONVJIT_STATUS_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    error = std::string("internal error: ") + e.what();
    return CONVJIT_STATUS_INTERNAL_ERROR;
  } catch (...) {
    error = "internal error: unknown exception";
    return CONVJIT_STATUS_INTERNAL_ERROR;
  }
}

}  // namespace convjit
