#include "dispatcher/cuda/context_scope.hpp"

#include "dispatcher/cuda/cuda_driver.hpp"

namespace convjit {

ContextScope::ContextScope(const CudaDriverApi& api, CUcontext context)
    : api_(api), status_(driver_status(api, api.ctx_push_current(context), "cuCtxPushCurrent")) {}

ContextScope::ContextScope(CUcontext context)
    : ContextScope(CudaDriver::instance().api(), context) {}

ContextScope::~ContextScope() {
  CUcontext popped = nullptr;
  if (status_.is_ok()) (void)api_.ctx_pop_current(&popped);
}

}  // namespace convjit
