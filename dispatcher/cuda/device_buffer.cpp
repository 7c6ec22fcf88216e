#include "dispatcher/cuda/device_buffer.hpp"

#include <algorithm>

namespace convjit {

namespace {

const CudaDriver& driver() { return CudaDriver::instance(); }

}  // namespace

Result<std::shared_ptr<DeviceContext>> DeviceContext::open(int ordinal) {
  if (Status s = driver().available(); !s.is_ok()) return s;
  const auto& api = driver().api();
  CUdevice device = 0;
  if (Status s = driver().check(api.device_get(&device, ordinal), "cuDeviceGet"); !s.is_ok())
    return s;
  CUcontext context = nullptr;
  if (Status s =
          driver().check(api.primary_ctx_retain(&context, device), "cuDevicePrimaryCtxRetain");
      !s.is_ok())
    return s;
  return std::shared_ptr<DeviceContext>(new DeviceContext(device, context));
}

DeviceContext::~DeviceContext() { (void)driver().api().primary_ctx_release(device_); }

Status DeviceContext::synchronize() const {
  const ContextScope scope = enter();
  if (!scope.status().is_ok()) return scope.status();
  return driver().check(driver().api().stream_synchronize(nullptr), "cuStreamSynchronize");
}

Result<std::unique_ptr<DeviceBuffer>> DeviceBuffer::allocate(std::shared_ptr<DeviceContext> context,
                                                             std::size_t bytes) {
  const ContextScope scope = context->enter();
  if (!scope.status().is_ok()) return scope.status();
  CUdeviceptr pointer = 0;
  if (Status s = driver().check(driver().api().mem_alloc(&pointer, std::max<std::size_t>(bytes, 1)),
                                "cuMemAlloc");
      !s.is_ok())
    return s;
  return std::unique_ptr<DeviceBuffer>(new DeviceBuffer(std::move(context), pointer, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  const ContextScope scope = context_->enter();
  (void)driver().api().mem_free(pointer_);
}

Status DeviceBuffer::upload(const void* host) const {
  if (bytes_ == 0) return Status::ok();
  const ContextScope scope = context_->enter();
  if (!scope.status().is_ok()) return scope.status();
  return driver().check(driver().api().memcpy_htod(pointer_, host, bytes_), "cuMemcpyHtoD");
}

Status DeviceBuffer::download(void* host) const {
  if (bytes_ == 0) return Status::ok();
  const ContextScope scope = context_->enter();
  if (!scope.status().is_ok()) return scope.status();
  return driver().check(driver().api().memcpy_dtoh(host, pointer_, bytes_), "cuMemcpyDtoH");
}

std::unique_ptr<StreamWorkspaces> make_device_workspaces(std::size_t bytes,
                                                         std::size_t zeroed_offset,
                                                         std::size_t zeroed_bytes) {
  return std::make_unique<StreamWorkspaces>(
      bytes,
      [zeroed_offset, zeroed_bytes](std::size_t n) -> Result<void*> {
        CUdeviceptr memory = 0;
        if (Status s = driver().check(driver().api().mem_alloc(&memory, n), "cuMemAlloc (workspace)");
            !s.is_ok())
          return s;
        if (zeroed_bytes == 0) return reinterpret_cast<void*>(memory);
        if (Status s =
                driver().check(driver().api().memset_d8(memory + zeroed_offset, 0, zeroed_bytes),
                               "cuMemsetD8 (the workspace's counters)");
            !s.is_ok()) {
          (void)driver().api().mem_free(memory);
          return s;
        }
        return reinterpret_cast<void*>(memory);
      },
      [](void* memory) { (void)driver().api().mem_free(reinterpret_cast<CUdeviceptr>(memory)); });
}

}  // namespace convjit
