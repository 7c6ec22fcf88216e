// How a kernel writes its result: the alpha/beta blend of every convjit op.
#pragma once
#include "common/kernel_abi.cuh"

namespace convjit_device {

// out = alpha * value + beta * out; out is not read when beta == 0.
__device__ __forceinline__ void scale_store(storage_t* out, float value, float alpha, float beta) {
  float result = alpha * value;
  if (beta != 0.0f) result += beta * load(*out);
  *out = store(result);
}

}  // namespace convjit_device
