#include "dispatcher/cuda/cuda_driver.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include "dispatcher/libraries/dynamic_symbol.hpp"
#include "dispatcher/libraries/library_call_status.hpp"

namespace convjit {

const char* resolve_driver_api(void* library, CudaDriverApi& api, Status& timing) {
  const SymbolLookup symbols[] = {
      CONVJIT_LOAD_SYMBOL(library, api, init, cuInit),
      CONVJIT_LOAD_SYMBOL(library, api, get_error_string, cuGetErrorString),
      CONVJIT_LOAD_SYMBOL(library, api, device_get_count, cuDeviceGetCount),
      CONVJIT_LOAD_SYMBOL(library, api, device_get, cuDeviceGet),
      CONVJIT_LOAD_SYMBOL(library, api, device_get_name, cuDeviceGetName),
      CONVJIT_LOAD_SYMBOL(library, api, device_get_attribute, cuDeviceGetAttribute),
      CONVJIT_LOAD_SYMBOL(library, api, primary_ctx_retain, cuDevicePrimaryCtxRetain),
      CONVJIT_LOAD_SYMBOL(library, api, primary_ctx_release, cuDevicePrimaryCtxRelease_v2),
      CONVJIT_LOAD_SYMBOL(library, api, ctx_push_current, cuCtxPushCurrent_v2),
      CONVJIT_LOAD_SYMBOL(library, api, ctx_pop_current, cuCtxPopCurrent_v2),
      CONVJIT_LOAD_SYMBOL(library, api, ctx_get_device, cuCtxGetDevice),
      CONVJIT_LOAD_SYMBOL(library, api, module_load_data, cuModuleLoadData),
      CONVJIT_LOAD_SYMBOL(library, api, module_unload, cuModuleUnload),
      CONVJIT_LOAD_SYMBOL(library, api, module_get_function, cuModuleGetFunction),
      CONVJIT_LOAD_SYMBOL(library, api, launch_kernel, cuLaunchKernel),
      CONVJIT_LOAD_SYMBOL(library, api, func_set_attribute, cuFuncSetAttribute),
      CONVJIT_LOAD_SYMBOL(library, api, mem_alloc, cuMemAlloc_v2),
      CONVJIT_LOAD_SYMBOL(library, api, mem_free, cuMemFree_v2),
      CONVJIT_LOAD_SYMBOL(library, api, mem_get_info, cuMemGetInfo_v2),
      CONVJIT_LOAD_SYMBOL(library, api, memcpy_htod, cuMemcpyHtoD_v2),
      CONVJIT_LOAD_SYMBOL(library, api, memcpy_dtoh, cuMemcpyDtoH_v2),
      CONVJIT_LOAD_SYMBOL(library, api, memset_d8, cuMemsetD8_v2),
      CONVJIT_LOAD_SYMBOL(library, api, memset_d8_async, cuMemsetD8Async),
      CONVJIT_LOAD_SYMBOL(library, api, stream_synchronize, cuStreamSynchronize),
      CONVJIT_LOAD_SYMBOL(library, api, stream_create, cuStreamCreate),
      CONVJIT_LOAD_SYMBOL(library, api, stream_destroy, cuStreamDestroy_v2),
  };
  // The _v2 name first; before CUDA 12.8 the same function had the plain one.
  const bool elapsed = load_symbol(library, "cuEventElapsedTime_v2", api.event_elapsed_time) ||
                       load_symbol(library, "cuEventElapsedTime", api.event_elapsed_time);
  const SymbolLookup events[] = {
      CONVJIT_LOAD_SYMBOL(library, api, event_create, cuEventCreate),
      CONVJIT_LOAD_SYMBOL(library, api, event_record, cuEventRecord),
      CONVJIT_LOAD_SYMBOL(library, api, event_synchronize, cuEventSynchronize),
      SymbolLookup{"cuEventElapsedTime", elapsed},
      CONVJIT_LOAD_SYMBOL(library, api, event_destroy, cuEventDestroy_v2),
  };
  (void)load_symbol(library, "cuLaunchKernelEx", api.launch_kernel_ex);
  (void)load_symbol(library, "cuOccupancyMaxActiveClusters", api.occupancy_max_active_clusters);
  (void)load_symbol(library, "cuTensorMapEncodeTiled", api.tensor_map_encode_tiled);
  (void)load_symbol(library, "cuTensorMapEncodeIm2col", api.tensor_map_encode_im2col);
  if (const char* missing = first_missing(events))
    timing = Status::not_available(fmt::format(
        "the CUDA driver lacks {}: kernels cannot be timed with CUDA events; update the driver",
        missing));
  return first_missing(symbols);
}

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
    timing_ = status_;
    return;
  }
  if (const char* missing = resolve_driver_api(library, api_, timing_)) {
    status_ =
        Status::not_available(fmt::format("the CUDA driver lacks {}; update the driver", missing));
    return;
  }
  status_ = check(api_.init(0), "cuInit");
  int count = 0;
  if (status_.is_ok()) status_ = check(api_.device_get_count(&count), "cuDeviceGetCount");
  if (status_.is_ok() && count == 0)
    status_ = Status::not_available("the CUDA driver sees no device");
}

Status driver_status(const CudaDriverApi& api, CUresult result, const char* call) {
  if (result == CUDA_SUCCESS) return Status::ok();
  const char* text = nullptr;
  if (api.get_error_string) api.get_error_string(result, &text);
  return failed_library_call(CONVJIT_STATUS_EXECUTION_FAILED, call, text, static_cast<int>(result));
}

Status CudaDriver::check(CUresult result, const char* call) const {
  return driver_status(api_, result, call);
}

std::string CudaDriver::arch_of(int ordinal) const {
  CUdevice device = 0;
  int major = 0, minor = 0;
  if (!status_.is_ok() || api_.device_get(&device, ordinal) != CUDA_SUCCESS ||
      api_.device_get_attribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) !=
          CUDA_SUCCESS ||
      api_.device_get_attribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device) !=
          CUDA_SUCCESS)
    return {};
  return fmt::format("sm_{}{}", major, minor);
}

int CudaDriver::sm_count_of(int ordinal) const {
  CUdevice device = 0;
  int sms = 0;
  if (!status_.is_ok() || api_.device_get(&device, ordinal) != CUDA_SUCCESS ||
      api_.device_get_attribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device) !=
          CUDA_SUCCESS)
    return 0;
  return sms;
}

std::string CudaDriver::name_of(int ordinal) const {
  CUdevice device = 0;
  char name[256] = {};
  if (!status_.is_ok() || api_.device_get(&device, ordinal) != CUDA_SUCCESS ||
      api_.device_get_name(name, sizeof name, device) != CUDA_SUCCESS)
    return {};
  return name;
}

Result<int> CudaDriver::current_device() const {
  if (!status_.is_ok()) return status_;
  CUdevice device = 0;
  const CUresult result = api_.ctx_get_device(&device);
  if (result == CUDA_ERROR_INVALID_CONTEXT) return 0;
  if (Status s = check(result, "cuCtxGetDevice"); !s.is_ok()) return s;
  return static_cast<int>(device);
}

}  // namespace convjit
