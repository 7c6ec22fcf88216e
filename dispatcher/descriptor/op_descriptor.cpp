#include "dispatcher/descriptor/op_descriptor.hpp"

#include <xxhash.h>

#include <bit>

namespace convjit {

std::uint64_t hash_descriptor(const OpDescriptor& desc) { return XXH3_64bits(&desc, sizeof desc); }

Dims5 contiguous_strides(const Dims5& dims, int rank, bool channels_last) {
  // Logical dim order N, C, S0.. ; memory order (outermost first):
  // NCHW: N, C, S0, S1, S2   NHWC: N, S0, S1, S2, C
  std::array<int, kMaxRank> memory_order{};
  int n = 0;
  memory_order[n++] = 0;
  if (!channels_last) memory_order[n++] = 1;
  for (int d = 2; d < rank; ++d) memory_order[n++] = d;
  if (channels_last) memory_order[n++] = 1;

  // Unsigned arithmetic: unvalidated huge dims wrap instead of invoking
  // undefined behaviour; validation then rejects the tensor's size.
  Dims5 strides{};
  std::uint64_t running = 1;
  for (int i = rank - 1; i >= 0; --i) {
    const auto dim = static_cast<std::size_t>(memory_order[static_cast<std::size_t>(i)]);
    strides[dim] = static_cast<std::int64_t>(running);
    running *= static_cast<std::uint64_t>(dims[dim]);
  }
  return strides;
}

std::string_view op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::conv:
      return "conv";
    case OpKind::pool:
      return "pool";
    case OpKind::bias_grad:
      return "bias_grad";
    case OpKind::batchnorm:
      return "batchnorm";
    case OpKind::resize:
      return "resize";
  }
  return "?";
}

std::string_view direction_name(Direction direction) {
  switch (direction) {
    case Direction::fwd:
      return "fwd";
    case Direction::bwddata:
      return "bwddata";
    case Direction::bwdfilt:
      return "bwdfilt";
    case Direction::bwd:
      return "bwd";
  }
  return "?";
}

std::string_view pool_mode_name(PoolingMode mode) {
  switch (mode) {
    case PoolingMode::none:
      return "none";
    case PoolingMode::max:
      return "max";
    case PoolingMode::avg_exclude_pad:
      return "avg";
    case PoolingMode::avg_include_pad:
      return "avg-include-pad";
  }
  return "?";
}

double OpDescriptor::resize_scale(int i) const {
  return std::bit_cast<double>(resize_scale_bits[static_cast<std::size_t>(i)]);
}

double OpDescriptor::norm_epsilon() const { return std::bit_cast<double>(norm_epsilon_bits); }

std::string_view resize_mode_name(ResizeMode mode) {
  switch (mode) {
    case ResizeMode::none:
      return "none";
    case ResizeMode::nearest_floor:
      return "nearest";
    case ResizeMode::nearest_ceil:
      return "nearest-ceil";
    case ResizeMode::nearest_round_prefer_floor:
      return "nearest-round-prefer-floor";
    case ResizeMode::nearest_round_prefer_ceil:
      return "nearest-round-prefer-ceil";
    case ResizeMode::linear:
      return "linear";
  }
  return "?";
}

std::string_view resize_coordinates_name(ResizeCoordinates coordinates) {
  switch (coordinates) {
    case ResizeCoordinates::asymmetric:
      return "asymmetric";
    case ResizeCoordinates::half_pixel:
      return "half-pixel";
    case ResizeCoordinates::pytorch_half_pixel:
      return "pytorch-half-pixel";
    case ResizeCoordinates::align_corners:
      return "align-corners";
    case ResizeCoordinates::tf_half_pixel_for_nn:
      return "tf-half-pixel-for-nn";
  }
  return "?";
}

std::optional<ResizeMode> parse_resize_mode(std::string_view name) {
  for (auto m : kResizeModes)
    if (resize_mode_name(m) == name) return m;
  return std::nullopt;
}

std::optional<ResizeCoordinates> parse_resize_coordinates(std::string_view name) {
  for (auto c : kResizeCoordinates)
    if (resize_coordinates_name(c) == name) return c;
  return std::nullopt;
}

DataType norm_param_dtype(DataType dtype) {
  return dtype == DataType::f64 ? DataType::f64 : DataType::f32;
}

std::string_view activation_name(Activation activation) {
  switch (activation) {
    case Activation::identity:
      return "identity";
    case Activation::relu:
      return "relu";
    case Activation::silu:
      return "silu";
    case Activation::sigmoid:
      return "sigmoid";
  }
  return "?";
}

}  // namespace convjit
