// A stand-in for libcuda.so.1 that exports the driver symbols convjit looks
// up, for tests of the symbol table.  Only the context stack works (push,
// pop, get and set, for tests of ContextScope), cuGetErrorString and
// cuOccupancyMaxActiveClusters (kResidentClusters); every other symbol is
// never called.
// FAKE_DRIVER_BEFORE_12_8 leaves out cuEventElapsedTime_v2 (older drivers
// have only cuEventElapsedTime); FAKE_DRIVER_WITHOUT_EVENTS leaves out every
// event function.
#include <vector>

#define CONVJIT_FAKE_SYMBOL(name) \
  extern "C" int name() { return 0; }

namespace {

constexpr int kSuccess = 0;
constexpr int kInvalidContext = 201;  // CUDA_ERROR_INVALID_CONTEXT
// A context the fake refuses to push, so tests can see a failed push.
void* const kRefusedContext = reinterpret_cast<void*>(0xbad);

// One stack for the process, not one per thread as in a real driver: the
// tests that use it run on one thread, and thread-local storage in a
// library that is opened and closed again crashed LeakSanitizer's exit-time
// scan (sanitizer run, under ctest).
std::vector<void*> g_stack;

}  // namespace

// What cuOccupancyMaxActiveClusters tells of any launch: fewer clusters
// than a 132-SM device's SMs would hold in fours (33), as where its GPCs'
// SMs do not divide into them (test_cuda_driver.cpp).
extern "C" int cuOccupancyMaxActiveClusters(int* clusters, void*, const void*) {
  constexpr int kResidentClusters = 31;
  *clusters = kResidentClusters;
  return kSuccess;
}

extern "C" int cuGetErrorString(int error, const char** text) {
  *text = error == kInvalidContext ? "invalid device context" : "unknown error";
  return kSuccess;
}

extern "C" int cuCtxPushCurrent_v2(void* context) {
  if (context == nullptr || context == kRefusedContext) return kInvalidContext;
  g_stack.push_back(context);
  return kSuccess;
}

extern "C" int cuCtxPopCurrent_v2(void** context) {
  if (g_stack.empty()) return kInvalidContext;
  if (context) *context = g_stack.back();
  g_stack.pop_back();
  return kSuccess;
}

extern "C" int cuCtxGetCurrent(void** context) {
  *context = g_stack.empty() ? nullptr : g_stack.back();
  return kSuccess;
}

// Replaces the top of the stack, as the real driver does.
extern "C" int cuCtxSetCurrent(void* context) {
  if (!g_stack.empty()) g_stack.pop_back();
  if (context) g_stack.push_back(context);
  return kSuccess;
}

CONVJIT_FAKE_SYMBOL(cuInit)
CONVJIT_FAKE_SYMBOL(cuDeviceGetCount)
CONVJIT_FAKE_SYMBOL(cuDeviceGet)
CONVJIT_FAKE_SYMBOL(cuDeviceGetName)
CONVJIT_FAKE_SYMBOL(cuDeviceGetAttribute)
CONVJIT_FAKE_SYMBOL(cuDevicePrimaryCtxRetain)
CONVJIT_FAKE_SYMBOL(cuDevicePrimaryCtxRelease_v2)
CONVJIT_FAKE_SYMBOL(cuCtxGetDevice)
CONVJIT_FAKE_SYMBOL(cuModuleLoadData)
CONVJIT_FAKE_SYMBOL(cuModuleUnload)
CONVJIT_FAKE_SYMBOL(cuModuleGetFunction)
CONVJIT_FAKE_SYMBOL(cuLaunchKernel)
CONVJIT_FAKE_SYMBOL(cuFuncSetAttribute)
CONVJIT_FAKE_SYMBOL(cuTensorMapEncodeTiled)
CONVJIT_FAKE_SYMBOL(cuTensorMapEncodeIm2col)
CONVJIT_FAKE_SYMBOL(cuMemAlloc_v2)
CONVJIT_FAKE_SYMBOL(cuMemFree_v2)
CONVJIT_FAKE_SYMBOL(cuMemGetInfo_v2)
CONVJIT_FAKE_SYMBOL(cuMemcpyHtoD_v2)
CONVJIT_FAKE_SYMBOL(cuMemcpyDtoH_v2)
CONVJIT_FAKE_SYMBOL(cuMemsetD8_v2)
CONVJIT_FAKE_SYMBOL(cuMemsetD8Async)
CONVJIT_FAKE_SYMBOL(cuStreamSynchronize)
CONVJIT_FAKE_SYMBOL(cuStreamCreate)
CONVJIT_FAKE_SYMBOL(cuStreamDestroy_v2)
#ifndef FAKE_DRIVER_WITHOUT_EVENTS
CONVJIT_FAKE_SYMBOL(cuEventCreate)
CONVJIT_FAKE_SYMBOL(cuEventRecord)
CONVJIT_FAKE_SYMBOL(cuEventSynchronize)
CONVJIT_FAKE_SYMBOL(cuEventElapsedTime)
CONVJIT_FAKE_SYMBOL(cuEventDestroy_v2)
#ifndef FAKE_DRIVER_BEFORE_12_8
CONVJIT_FAKE_SYMBOL(cuEventElapsedTime_v2)
#endif
#endif
