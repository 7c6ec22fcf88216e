// RAII owners of oneDNN's handles, each destroyed through the loaded
// library, and the memory a oneDNN kernel owns.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <utility>

#include "dispatcher/backends/onednn/onednn_library.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

template <class Handle, auto OnednnApi::*destroy>
class OnednnHandle {
 public:
  OnednnHandle() = default;
  explicit OnednnHandle(Handle handle) : handle_(handle) {}
  OnednnHandle(OnednnHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  OnednnHandle& operator=(OnednnHandle&& other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  OnednnHandle(const OnednnHandle&) = delete;
  OnednnHandle& operator=(const OnednnHandle&) = delete;
  ~OnednnHandle() {
    if (handle_) (OnednnLibrary::instance().api().*destroy)(handle_);
  }

  [[nodiscard]] Handle get() const { return handle_; }

 private:
  Handle handle_ = nullptr;
};

using OnednnPrimitiveDesc = OnednnHandle<dnnl_primitive_desc_t, &OnednnApi::primitive_desc_destroy>;
using OnednnPrimitive = OnednnHandle<dnnl_primitive_t, &OnednnApi::primitive_destroy>;
using OnednnMemory = OnednnHandle<dnnl_memory_t, &OnednnApi::memory_destroy>;
using OnednnAttr = OnednnHandle<dnnl_primitive_attr_t, &OnednnApi::attr_destroy>;
using OnednnStream = OnednnHandle<dnnl_stream_t, &OnednnApi::stream_destroy>;

// The process's CPU engine, made once and kept until exit.
[[nodiscard]] Result<dnnl_engine_t> onednn_cpu_engine();

// A new in-order stream on that engine, for one kernel.
[[nodiscard]] Result<OnednnStream> onednn_cpu_stream();

// Host memory a kernel owns, 64-byte aligned as oneDNN's kernels prefer.
class HostBuffer {
 public:
  HostBuffer() = default;
  // Allocates `bytes` (none for 0); OUT_OF_MEMORY naming `what` when it cannot.
  [[nodiscard]] static Result<HostBuffer> allocate(std::size_t bytes, const char* what);

  [[nodiscard]] void* data() const { return data_.get(); }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> data_;
};

}  // namespace convjit
