// Device memory for callers that stage host data on a GPU (the CLI's
// `run --model`, the tuned policy, the GPU tests): the device's primary
// context, retained for as long as an owner lives, and buffers in it.
// Every call here enters the context with a ContextScope, so the caller's
// current context is the same after it as before.
#pragma once

#include <cstddef>
#include <memory>

#include "dispatcher/cuda/context_scope.hpp"
#include "dispatcher/cuda/cuda_driver.hpp"
#include "dispatcher/kernel_workspace.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

class DeviceContext {
 public:
  // NOT_AVAILABLE without a driver; the driver's error otherwise.
  static Result<std::shared_ptr<DeviceContext>> open(int ordinal);
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  [[nodiscard]] CUcontext get() const { return context_; }
  // The context current until the scope ends (check its status()).
  [[nodiscard]] ContextScope enter() const { return ContextScope(context_); }
  // Waits for the default stream, where convjit launches unless told otherwise.
  [[nodiscard]] Status synchronize() const;

 private:
  DeviceContext(CUdevice device, CUcontext context) : device_(device), context_(context) {}
  CUdevice device_;
  CUcontext context_;
};

class DeviceBuffer {
 public:
  static Result<std::unique_ptr<DeviceBuffer>> allocate(std::shared_ptr<DeviceContext> context,
                                                        std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  [[nodiscard]] Status upload(const void* host) const;  // `bytes` from host
  [[nodiscard]] Status download(void* host) const;      // `bytes` to host
  [[nodiscard]] void* get() const { return reinterpret_cast<void*>(pointer_); }
  [[nodiscard]] std::size_t bytes() const { return bytes_; }

 private:
  DeviceBuffer(std::shared_ptr<DeviceContext> context, CUdeviceptr pointer, std::size_t bytes)
      : context_(std::move(context)), pointer_(pointer), bytes_(bytes) {}
  std::shared_ptr<DeviceContext> context_;
  CUdeviceptr pointer_;
  std::size_t bytes_;
};

// Per-stream workspaces (kernel_workspace.hpp) in device memory of the
// context that is current when a stream's first call allocates; the owner
// enters that context again before destroying them.  Each buffer's
// `zeroed_bytes` from `zeroed_offset` are zeroed when it is allocated
// (KernelSource::zeroed_bytes: counters its kernel leaves zero).
[[nodiscard]] std::unique_ptr<StreamWorkspaces> make_device_workspaces(
    std::size_t bytes, std::size_t zeroed_offset = 0, std::size_t zeroed_bytes = 0);

}  // namespace convjit
