// RAII owner of a dlopen handle.  Opened with RTLD_NOW | RTLD_LOCAL: every
// tuned library exports the same symbol names, so symbols are looked up per
// handle and never leak into the global namespace.
#pragma once

#include <string>

#include "dispatcher/result.hpp"

namespace convjit {

class SharedLibrary {
 public:
  // Errors carry dlerror()'s text.
  [[nodiscard]] static Result<SharedLibrary> open(const std::string& path);

  SharedLibrary(SharedLibrary&& other) noexcept;
  SharedLibrary& operator=(SharedLibrary&& other) noexcept;
  SharedLibrary(const SharedLibrary&) = delete;
  SharedLibrary& operator=(const SharedLibrary&) = delete;
  ~SharedLibrary();

  // The address of `name`, or nullptr when the library does not export it.
  [[nodiscard]] void* symbol(const char* name) const;

  template <class Fn>
  [[nodiscard]] Fn function(const char* name) const {
    return reinterpret_cast<Fn>(symbol(name));
  }

  [[nodiscard]] const std::string& path() const { return path_; }

  // dlclose now; later symbol() calls return nullptr.
  void close() noexcept;

 private:
  SharedLibrary(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_ = nullptr;
  std::string path_;
};

}  // namespace convjit
