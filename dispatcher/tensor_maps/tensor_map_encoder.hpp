// A tensor map for a GPU launch: the driver's encoding of a TensorMapSpec
// (cuTensorMapEncodeTiled or cuTensorMapEncodeIm2col), passed to a kernel
// by value in its tensor_maps_t parameter (common/tensor_map.cuh).
#pragma once

#include <cuda.h>

#include "dispatcher/cuda/cuda_driver.hpp"
#include "dispatcher/result.hpp"
#include "dispatcher/tensor_maps/tensor_map_spec.hpp"

namespace convjit {

// Validates `spec` first (validate_tensor_map(), whose message names the
// field, where the driver answers a bare CUDA_ERROR_INVALID_VALUE), then
// encodes it.  NOT_AVAILABLE where the driver lacks the encoder.
[[nodiscard]] Result<CUtensorMap> encode_tensor_map(const CudaDriver& driver,
                                                    const TensorMapSpec& spec);

}  // namespace convjit
