#include "cuda/device_buffer.hpp"

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
  std::shared_ptr<DeviceContext> owner(new DeviceContext(device, context));
  if (Status s = owner->make_current(); !s.is_ok()) return s;
  return owner;
}

DeviceContext::~DeviceContext() { (void)driver().api().primary_ctx_release(device_); }

Status DeviceContext::make_current() const {
  return driver().check(driver().api().ctx_set_current(context_), "cuCtxSetCurrent");
}

Status DeviceContext::synchronize() const {
  if (Status s = make_current(); !s.is_ok()) return s;
  return driver().check(driver().api().stream_synchronize(nullptr), "cuStreamSynchronize");
}

Result<std::unique_ptr<DeviceBuffer>> DeviceBuffer::allocate(std::shared_ptr<DeviceContext> context,
                                                             std::size_t bytes) {
  if (Status s = context->make_current(); !s.is_ok()) return s;
  CUdeviceptr pointer = 0;
  if (Status s = driver().check(driver().api().mem_alloc(&pointer, std::max<std::size_t>(bytes, 1)),
                                "cuMemAlloc");
      !s.is_ok())
    return s;
  return std::unique_ptr<DeviceBuffer>(new DeviceBuffer(std::move(context), pointer, bytes));
}

DeviceBuffer::~DeviceBuffer() {
  (void)context_->make_current();
  (void)driver().api().mem_free(pointer_);
}

Status DeviceBuffer::upload(const void* host) const {
  if (bytes_ == 0) return Status::ok();
  if (Status s = context_->make_current(); !s.is_ok()) return s;
  return driver().check(driver().api().memcpy_htod(pointer_, host, bytes_), "cuMemcpyHtoD");
}

Status DeviceBuffer::download(void* host) const {
  if (bytes_ == 0) return Status::ok();
  if (Status s = context_->make_current(); !s.is_ok()) return s;
  return driver().check(driver().api().memcpy_dtoh(host, pointer_, bytes_), "cuMemcpyDtoH");
}

std::unique_ptr<StreamWorkspaces> make_device_workspaces(std::size_t bytes) {
  return std::make_unique<StreamWorkspaces>(
      bytes,
      [](std::size_t n) -> Result<void*> {
        CUdeviceptr memory = 0;
        if (Status s = driver().check(driver().api().mem_alloc(&memory, n), "cuMemAlloc (workspace)");
            !s.is_ok())
          return s;
        return reinterpret_cast<void*>(memory);
      },
      [](void* memory) { (void)driver().api().mem_free(reinterpret_cast<CUdeviceptr>(memory)); });
}

}  // namespace convjit
