// A stand-in for libcuda.so.1 that exports the driver symbols convjit looks
// up, for tests of the symbol table only: nothing here is ever called.
// FAKE_DRIVER_BEFORE_12_8 leaves out cuEventElapsedTime_v2 (older drivers
// have only cuEventElapsedTime); FAKE_DRIVER_WITHOUT_EVENTS leaves out every
// event function.
#define CONVJIT_FAKE_SYMBOL(name) \
  extern "C" int name() { return 0; }

CONVJIT_FAKE_SYMBOL(cuInit)
CONVJIT_FAKE_SYMBOL(cuGetErrorString)
CONVJIT_FAKE_SYMBOL(cuDeviceGetCount)
CONVJIT_FAKE_SYMBOL(cuDeviceGet)
CONVJIT_FAKE_SYMBOL(cuDeviceGetName)
CONVJIT_FAKE_SYMBOL(cuDeviceGetAttribute)
CONVJIT_FAKE_SYMBOL(cuDevicePrimaryCtxRetain)
CONVJIT_FAKE_SYMBOL(cuDevicePrimaryCtxRelease_v2)
CONVJIT_FAKE_SYMBOL(cuCtxSetCurrent)
CONVJIT_FAKE_SYMBOL(cuModuleLoadData)
CONVJIT_FAKE_SYMBOL(cuModuleUnload)
CONVJIT_FAKE_SYMBOL(cuModuleGetFunction)
CONVJIT_FAKE_SYMBOL(cuLaunchKernel)
CONVJIT_FAKE_SYMBOL(cuMemAlloc_v2)
CONVJIT_FAKE_SYMBOL(cuMemFree_v2)
CONVJIT_FAKE_SYMBOL(cuMemcpyHtoD_v2)
CONVJIT_FAKE_SYMBOL(cuMemcpyDtoH_v2)
CONVJIT_FAKE_SYMBOL(cuMemsetD8_v2)
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
