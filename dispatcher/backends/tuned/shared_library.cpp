#include "dispatcher/backends/tuned/shared_library.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <utility>

namespace convjit {

Result<SharedLibrary> SharedLibrary::open(const std::string& path) {
  ::dlerror();  // clear any stale error
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = ::dlerror();
    return Status::not_available(fmt::format("dlopen failed: {}", error ? error : "unknown error"));
  }
  return SharedLibrary(handle, path);
}

SharedLibrary::SharedLibrary(SharedLibrary&& other) noexcept
    : handle_(std::exchange(other.handle_, nullptr)), path_(std::move(other.path_)) {}

SharedLibrary& SharedLibrary::operator=(SharedLibrary&& other) noexcept {
  if (this != &other) {
    if (handle_) ::dlclose(handle_);
    handle_ = std::exchange(other.handle_, nullptr);
    path_ = std::move(other.path_);
  }
  return *this;
}

SharedLibrary::~SharedLibrary() { close(); }

void SharedLibrary::close() noexcept {
  if (handle_) ::dlclose(std::exchange(handle_, nullptr));
}

void* SharedLibrary::symbol(const char* name) const {
  return handle_ ? ::dlsym(handle_, name) : nullptr;
}

}  // namespace convjit
