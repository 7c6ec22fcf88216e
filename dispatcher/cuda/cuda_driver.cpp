#include "cuda/cuda_driver.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

namespace convjit {

namespace {

template <class Fn>
bool resolve(void* library, const char* name, Fn& target) {
  target = reinterpret_cast<Fn>(::dlsym(library, name));
  return target != nullptr;
}

}  // namespace

const CudaDriver& CudaDriver::instance() {
  static const CudaDriver* driver = new CudaDriver;  // the driver stays loaded until exit
  return *driver;
}

CudaDriver::CudaDriver() {
  void* library = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (library == nullptr) {
    const char* error = ::dlerror();
    status_ = Status::not_available(
        fmt::format("no CUDA driver: {}", error ? error : "libcuda.so.1 not found"));
    return;
  }
  const std::pair<const char*, bool> symbols[] = {
      {"cuInit", resolve(library, "cuInit", api_.init)},
      {"cuGetErrorString", resolve(library, "cuGetErrorString", api_.get_error_string)},
      {"cuDeviceGetCount", resolve(library, "cuDeviceGetCount", api_.device_get_count)},
      {"cuDeviceGet", resolve(library, "cuDeviceGet", api_.device_get)},
      {"cuDeviceGetName", resolve(library, "cuDeviceGetName", api_.device_get_name)},
      {"cuDeviceGetAttribute", resolve(library, "cuDeviceGetAttribute", api_.device_get_attribute)},
      {"cuDevicePrimaryCtxRetain",
       resolve(library, "cuDevicePrimaryCtxRetain", api_.primary_ctx_retain)},
      {"cuDevicePrimaryCtxRelease_v2",
       resolve(library, "cuDevicePrimaryCtxRelease_v2", api_.primary_ctx_release)},
      {"cuCtxSetCurrent", resolve(library, "cuCtxSetCurrent", api_.ctx_set_current)},
      {"cuModuleLoadData", resolve(library, "cuModuleLoadData", api_.module_load_data)},
      {"cuModuleUnload", resolve(library, "cuModuleUnload", api_.module_unload)},
      {"cuModuleGetFunction", resolve(library, "cuModuleGetFunction", api_.module_get_function)},
      {"cuLaunchKernel", resolve(library, "cuLaunchKernel", api_.launch_kernel)},
      {"cuMemAlloc_v2", resolve(library, "cuMemAlloc_v2", api_.mem_alloc)},
      {"cuMemFree_v2", resolve(library, "cuMemFree_v2", api_.mem_free)},
      {"cuMemcpyHtoD_v2", resolve(library, "cuMemcpyHtoD_v2", api_.memcpy_htod)},
      {"cuMemcpyDtoH_v2", resolve(library, "cuMemcpyDtoH_v2", api_.memcpy_dtoh)},
      {"cuMemsetD8_v2", resolve(library, "cuMemsetD8_v2", api_.memset_d8)},
      {"cuStreamSynchronize", resolve(library, "cuStreamSynchronize", api_.stream_synchronize)},
  };
  for (const auto& [name, found] : symbols)
    if (!found) {
      status_ =
          Status::not_available(fmt::format("the CUDA driver lacks {}; update the driver", name));
      return;
    }
  status_ = check(api_.init(0), "cuInit");
  int count = 0;
  if (status_.is_ok()) status_ = check(api_.device_get_count(&count), "cuDeviceGetCount");
  if (status_.is_ok() && count == 0)
    status_ = Status::not_available("the CUDA driver sees no device");
}

Status CudaDriver::check(CUresult result, const char* call) const {
  if (result == CUDA_SUCCESS) return Status::ok();
  const char* text = nullptr;
  if (api_.get_error_string) api_.get_error_string(result, &text);
  return Status(CONVJIT_STATUS_EXECUTION_FAILED,
                fmt::format("{} failed: {} ({})", call, text ? text : "unknown error",
                            static_cast<int>(result)));
}

std::string CudaDriver::arch_of(int ordinal) const {
  CUdevice device = 0;
  int major = 0, minor = 0;
  if (api_.device_get(&device, ordinal) != CUDA_SUCCESS ||
      api_.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) !=
          CUDA_SUCCESS ||
      api_.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device) !=
          CUDA_SUCCESS)
    return {};
  return fmt::format("sm_{}{}", major, minor);
}

std::string CudaDriver::name_of(int ordinal) const {
  CUdevice device = 0;
  char name[256] = {};
  if (api_.device_get(&device, ordinal) != CUDA_SUCCESS ||
      api_.device_get_name(name, sizeof name, device) != CUDA_SUCCESS)
    return {};
  return name;
}

}  // namespace convjit
