#include "dispatcher/tensor_maps/tensor_map_encoder.hpp"

#include <fmt/format.h>

#include <array>

namespace convjit {

namespace {

CUtensorMapDataType data_type(TensorMapElement element) {
  switch (element) {
    case TensorMapElement::f32:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT32;
    case TensorMapElement::f16:
      return CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    case TensorMapElement::bf16:
      break;
  }
  return CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
}

static_assert(static_cast<int>(TensorMapSwizzle::b128) == CU_TENSOR_MAP_SWIZZLE_128B);
static_assert(static_cast<int>(TensorMapInterleave::b32) == CU_TENSOR_MAP_INTERLEAVE_32B);

// The driver's encoding of a spec validate_tensor_map() accepted.
Result<CUtensorMap> encode_valid(const CudaDriver& driver, const TensorMapSpec& spec) {
  if (Status s = driver.available(); !s.is_ok()) return s;
  const CudaDriverApi& api = driver.api();
  const bool tiled = spec.mode == TensorMapMode::tiled;
  if ((tiled ? api.tensor_map_encode_tiled == nullptr : api.tensor_map_encode_im2col == nullptr))
    return Status::not_available(
        "the CUDA driver has no tensor map encoder (cuTensorMapEncodeTiled/Im2col, CUDA 12.0 and "
        "later): update the driver to run TMA kernels");
  CUtensorMap map{};
  void* address = const_cast<void*>(spec.global_address);  // the driver's signature; never written
  const auto interleave = static_cast<CUtensorMapInterleave>(spec.interleave);
  const auto swizzle = static_cast<CUtensorMapSwizzle>(spec.swizzle);
  const auto l2 = static_cast<CUtensorMapL2promotion>(spec.l2_promotion);
  const CUtensorMapFloatOOBfill fill = spec.nan_fill
                                           ? CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA
                                           : CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE;
  const CUresult result =
      tiled
          ? api.tensor_map_encode_tiled(&map, data_type(spec.element), spec.rank, address,
                                        spec.dims.data(), spec.strides.data(), spec.box.data(),
                                        spec.element_strides.data(), interleave, swizzle, l2, fill)
          : api.tensor_map_encode_im2col(
                &map, data_type(spec.element), spec.rank, address, spec.dims.data(),
                spec.strides.data(), spec.lower_corner.data(), spec.upper_corner.data(),
                spec.channels_per_pixel, spec.pixels_per_column, spec.element_strides.data(),
                interleave, swizzle, l2, fill);
  if (Status s = driver.check(result, tiled ? "cuTensorMapEncodeTiled" : "cuTensorMapEncodeIm2col");
      !s.is_ok())
    return s;
  return map;
}

}  // namespace

Result<CUtensorMap> encode_tensor_map(const CudaDriver& driver, const TensorMapSpec& spec) {
  if (Status s = validate_tensor_map(spec); !s.is_ok()) return s;
  return encode_valid(driver, spec);
}

Result<DeviceTensorMaps> encode_tensor_maps(const CudaDriver& driver,
                                            std::span<const TensorMapArgument> arguments,
                                            const TensorMapOperands& operands) {
  // Every map checked before the driver is asked for any: a bad one is
  // named whether or not this machine has a driver.
  TensorMapSpec specs[kMaxTensorMaps];
  if (Status s = bind_tensor_maps(arguments, operands, specs); !s.is_ok()) return s;
  DeviceTensorMaps maps{};
  for (std::size_t i = 0; i < arguments.size(); ++i) {
    auto encoded = encode_valid(driver, specs[i]);
    if (!encoded.is_ok())
      return Status(encoded.status().code(),
                    fmt::format("tensor map {}: {}", i, encoded.status().message()));
    maps.map[i] = encoded.value();
  }
  return maps;
}

}  // namespace convjit
