#include "dispatcher/c_api/api_guard.hpp"

#include <fmt/format.h>

#include <cstring>

namespace convjit {

namespace {
thread_local std::string t_last_error;
thread_local const char* t_last_backend = "";
}  // namespace

std::string& last_error_message() { return t_last_error; }
void set_last_backend(std::string_view name) { t_last_backend = name.data(); }
const char* last_backend() { return t_last_backend; }

Status write_text(const std::string& text, const char* what, char* buf, std::size_t size,
                  std::size_t* required) {
  if (required) *required = text.size() + 1;
  if (buf == nullptr && size == 0) return Status::ok();  // size query
  if (buf == nullptr)
    return Status::invalid(fmt::format(
        "{} is NULL but buf_size is {}; pass a buffer of at least {} bytes, or NULL with "
        "buf_size 0 to ask for the size",
        what, size, text.size() + 1));
  if (size < text.size() + 1)
    return Status::invalid(
        fmt::format("{} of {} bytes is too small: {} are needed", what, size, text.size() + 1));
  std::memcpy(buf, text.c_str(), text.size() + 1);
  return Status::ok();
}

}  // namespace convjit
