// What every C API entry point shares: no exception crosses the boundary;
// a failure becomes a status plus the thread's last-error message, and a
// success records the backend that served it.
#pragma once

#include <new>
#include <string>
#include <string_view>

#include "convjit/convjit.h"
#include "convjit/status.hpp"

namespace convjit {

// The thread's last-error message (convjit_last_error_message).
std::string& last_error_message();
// The backend that served the thread's last successful operation; `name`
// must be a static string (backend names are).
void set_last_backend(std::string_view name);
const char* last_backend();

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
