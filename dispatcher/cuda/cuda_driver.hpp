// The CUDA driver API, loaded at run time with dlopen("libcuda.so.1") so the
// library and CLI start on machines without a driver; there, available()
// says "no CUDA driver" and the JIT backend declines.  RAII owners for the
// handles convjit creates live next to their users.
#pragma once

#include <cuda.h>

#include <string>

#include "convjit/status.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

struct CudaDriverApi {
  decltype(&::cuInit) init = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;
  decltype(&::cuDeviceGetCount) device_get_count = nullptr;
  decltype(&::cuDeviceGet) device_get = nullptr;
  decltype(&::cuDeviceGetName) device_get_name = nullptr;
  decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
  decltype(&::cuDevicePrimaryCtxRetain) primary_ctx_retain = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease_v2) primary_ctx_release = nullptr;
  decltype(&::cuCtxPushCurrent_v2) ctx_push_current = nullptr;
  decltype(&::cuCtxPopCurrent_v2) ctx_pop_current = nullptr;
  decltype(&::cuCtxGetDevice) ctx_get_device = nullptr;
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleUnload) module_unload = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuFuncSetAttribute) func_set_attribute = nullptr;
  decltype(&::cuMemAlloc_v2) mem_alloc = nullptr;
  decltype(&::cuMemFree_v2) mem_free = nullptr;
  decltype(&::cuMemGetInfo_v2) mem_get_info = nullptr;
  decltype(&::cuMemcpyHtoD_v2) memcpy_htod = nullptr;
  decltype(&::cuMemcpyDtoH_v2) memcpy_dtoh = nullptr;
  decltype(&::cuMemsetD8_v2) memset_d8 = nullptr;
  decltype(&::cuMemsetD8Async) memset_d8_async = nullptr;
  decltype(&::cuStreamSynchronize) stream_synchronize = nullptr;
  decltype(&::cuStreamCreate) stream_create = nullptr;
  decltype(&::cuStreamDestroy_v2) stream_destroy = nullptr;
  // Timing, optional (timing_available()): cuEventElapsedTime_v2 exists
  // only in drivers for CUDA 12.8 and later, so older ones give
  // cuEventElapsedTime, which has the same signature.
  decltype(&::cuEventCreate) event_create = nullptr;
  decltype(&::cuEventRecord) event_record = nullptr;
  decltype(&::cuEventSynchronize) event_synchronize = nullptr;
  decltype(&::cuEventElapsedTime_v2) event_elapsed_time = nullptr;
  decltype(&::cuEventDestroy_v2) event_destroy = nullptr;
  // Launches with attributes (clusters), optional: drivers before CUDA
  // 12.0 lack it, and only kernels launched in clusters need it.
  decltype(&::cuLaunchKernelEx) launch_kernel_ex = nullptr;
  // How many clusters fit at once, optional (CUDA 12.0): a persistent
  // grid in clusters is cut to them where the driver tells.
  decltype(&::cuOccupancyMaxActiveClusters) occupancy_max_active_clusters = nullptr;
  // TMA's tensor maps, optional: drivers before CUDA 12.0 lack them, and
  // only the kernels that copy with TMA need them (tensor_maps/).
  decltype(&::cuTensorMapEncodeTiled) tensor_map_encode_tiled = nullptr;
  decltype(&::cuTensorMapEncodeIm2col) tensor_map_encode_im2col = nullptr;
};

// Fills `api` from a loaded driver library: the first required symbol it
// lacks, or nullptr.  `timing` becomes NOT_AVAILABLE, naming the symbol,
// when the event functions are missing; the driver stays usable without them.
[[nodiscard]] const char* resolve_driver_api(void* library, CudaDriverApi& api, Status& timing);

// A driver call's result as a Status naming the call, with the driver's
// own description of the error.
[[nodiscard]] Status driver_status(const CudaDriverApi& api, CUresult result, const char* call);

class CudaDriver {
 public:
  // Loads and initialises the driver once per process.
  static const CudaDriver& instance();

  // OK, or NOT_AVAILABLE saying why ("no CUDA driver: ...").
  [[nodiscard]] const Status& available() const { return status_; }
  // OK when CUDA events can time kernels; checked by every timing.
  [[nodiscard]] const Status& timing_available() const { return timing_; }
  [[nodiscard]] const CudaDriverApi& api() const { return api_; }

  // A driver call's result as a Status naming the call.
  [[nodiscard]] Status check(CUresult result, const char* call) const;

  // "sm_90" for the device's compute capability; empty without a driver.
  [[nodiscard]] std::string arch_of(int ordinal) const;
  // The device's SMs; 0 when it cannot be queried.
  [[nodiscard]] int sm_count_of(int ordinal) const;
  // "NVIDIA H100 80GB HBM3"; empty when it cannot be queried.
  [[nodiscard]] std::string name_of(int ordinal) const;
  // The device of the calling thread's current context, or 0 when none is
  // current (the CUDA runtime's default device).
  [[nodiscard]] Result<int> current_device() const;

 private:
  CudaDriver();
  CudaDriverApi api_;
  Status status_;
  Status timing_;
};

}  // namespace convjit
