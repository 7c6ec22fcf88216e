// A tensor map for a GPU launch: the driver's encoding of a TensorMapSpec
// (cuTensorMapEncodeTiled or cuTensorMapEncodeIm2col), passed to a kernel
// by value in its tensor_maps_t parameter (common/tensor_map.cuh).
#pragma once

#include <cuda.h>

#include <span>

#include "dispatcher/cuda/cuda_driver.hpp"
#include "dispatcher/result.hpp"
#include "dispatcher/tensor_maps/tensor_map_argument.hpp"
#include "dispatcher/tensor_maps/tensor_map_spec.hpp"

namespace convjit {

// Validates `spec` first (validate_tensor_map(), whose message names the
// field, where the driver answers a bare CUDA_ERROR_INVALID_VALUE), then
// encodes it.  NOT_AVAILABLE where the driver lacks the encoder.
[[nodiscard]] Result<CUtensorMap> encode_tensor_map(const CudaDriver& driver,
                                                    const TensorMapSpec& spec);

// The bytes of a kernel's tensor_maps_t parameter: CUtensorMap's layout.
struct DeviceTensorMaps {
  CUtensorMap map[kMaxTensorMaps];
};

// A launch's maps: each argument bound to the call's operands (bound_spec)
// and encoded; the error names the map.  Nothing is allocated: it runs on
// every launch.
[[nodiscard]] Result<DeviceTensorMaps> encode_tensor_maps(
    const CudaDriver& driver, std::span<const TensorMapArgument> arguments,
    const TensorMapOperands& operands);

}  // namespace convjit
