// OpDescriptor: the complete, canonical identity of one operation.  Two
// calls with equal descriptors can share a kernel; the descriptor's name
// (descriptor_name.hpp) is what tuned libraries and cache entries are
// called after.
//
// Shapes follow LBANN's layout: five slots in logical order N, C, spatial...
// with unused trailing slots 0 (a 4D tensor is N_C_H_W_0).  Spatial
// parameters use three slots, unused trailing ones 0.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>

#include "dispatcher/descriptor/dtype.hpp"

namespace convjit {

inline constexpr int kMaxRank = 5;
inline constexpr int kMaxSpatialDims = 3;

using Dims5 = std::array<std::int64_t, kMaxRank>;
using Dims3 = std::array<std::int64_t, kMaxSpatialDims>;

enum class OpKind : std::int32_t { conv, pool, bias_grad, batchnorm, resize };

// Conv uses fwd/bwddata/bwdfilt, bias_grad only bwd, the others fwd/bwd.
enum class Direction : std::int32_t { fwd, bwddata, bwdfilt, bwd };

enum class PoolingMode : std::int32_t { none, max, avg_exclude_pad, avg_include_pad };

// A conv fwd's fused epilogue: y = act(alpha conv(x, w) + bias [+ residual]) + beta y.
enum class Activation : std::int32_t { identity, relu, silu, sigmoid };
// Which extra operands the epilogue adds (a bit mask).
enum EpilogueOperand : std::int32_t { kEpilogueBias = 1, kEpilogueResidual = 2 };

// PyTorch's and ONNX's default BatchNorm epsilon, which names leave unsaid.
inline constexpr double kDefaultNormEpsilon = 1e-5;

// A BatchNorm's variant (a bit mask).  Its per-channel scale (gamma) and
// shift (beta) may be absent (1 and 0); inference normalises with the
// running statistics; ONNX's running update uses the population variance
// and momentum' = 1 - momentum.  A bwd computes the gradients its mask names.
enum NormFlag : std::int32_t {
  kNormScale = 1,
  kNormShift = 2,
  kNormInference = 4,
  kNormOnnxRunningStats = 8,
  kNormGradInput = 16,
  kNormGradScale = 32,
  kNormGradShift = 64,
};
inline constexpr std::int32_t kNormGradMask = kNormGradInput | kNormGradScale | kNormGradShift;

// Resize: how an output coordinate maps to an input one (ONNX's
// coordinate_transformation_mode) and how a nearest resize rounds it.
enum class ResizeMode : std::int32_t {
  none,
  nearest_floor,
  nearest_ceil,
  nearest_round_prefer_floor,
  nearest_round_prefer_ceil,
  linear,
};
enum class ResizeCoordinates : std::int32_t {
  asymmetric,          // x = o / scale (PyTorch's nearest)
  half_pixel,          // x = (o + 0.5) / scale - 0.5 (PyTorch's nearest-exact and linear)
  pytorch_half_pixel,  // half_pixel, but 0 when the output size is 1 (ONNX)
  align_corners,       // x = o (in - 1) / (out - 1)
  tf_half_pixel_for_nn,  // x = (o + 0.5) / scale (ONNX, nearest only)
};

// Every resize mode and coordinate rule (ResizeMode::none aside), in order.
inline constexpr ResizeMode kResizeModes[] = {
    ResizeMode::nearest_floor, ResizeMode::nearest_ceil, ResizeMode::nearest_round_prefer_floor,
    ResizeMode::nearest_round_prefer_ceil, ResizeMode::linear};
inline constexpr ResizeCoordinates kResizeCoordinates[] = {
    ResizeCoordinates::asymmetric, ResizeCoordinates::half_pixel,
    ResizeCoordinates::pytorch_half_pixel, ResizeCoordinates::align_corners,
    ResizeCoordinates::tf_half_pixel_for_nn};

// Slot meaning per op (LBANN's convention for conv):
//   conv fwd (x, w, y)   conv bwddata (dx, w, dy)   conv bwdfilt (x, dw, dy)
//   pool fwd (x, -, y)   pool bwd (x and dx, -, dy) bias_grad (-, -, dy)
//   batchnorm fwd (x, -, y)   batchnorm bwd (x and dx, -, dy)
//   resize fwd (x, -, y)      resize bwd (dx, -, dy)
struct OpDescriptor {
  OpKind kind = OpKind::conv;
  Direction direction = Direction::fwd;
  PoolingMode pool_mode = PoolingMode::none;
  DataType dtype = DataType::f32;
  std::int32_t spatial_dims = 0;
  std::int32_t symbolic_batch = 0;  // batch entries are the literal B in names
  // Conv fwd (with its operands) and batchnorm; identity and no operands
  // is the plain op.
  Activation activation = Activation::identity;
  std::int32_t epilogue_operands = 0;  // EpilogueOperand bits
  std::int32_t norm_flags = 0;         // batchnorm only: NormFlag bits
  ResizeMode resize_mode = ResizeMode::none;
  ResizeCoordinates resize_coordinates = ResizeCoordinates::asymmetric;
  std::int32_t unused = 0;  // keeps the layout free of padding bytes

  Dims5 x_dims{}, x_strides{};
  Dims5 w_dims{}, w_strides{};  // conv only
  Dims5 y_dims{}, y_strides{};
  Dims3 window{};  // pool only
  Dims3 pad_begin{}, pad_end{}, stride{}, dilation{};
  std::int64_t groups = 0;  // conv only
  // Resize only: each spatial dim's scale (out / in) as the caller gave it,
  // as the bits of a double (see resize_scale()); 0 derives it from the
  // shapes.  PyTorch and ONNX map coordinates with the given scale, which
  // differs from out / in when the output size was rounded.
  Dims3 resize_scale_bits{};
  // Batchnorm only: epsilon, as the bits of a double (see norm_epsilon()).
  // Part of the op, not a run-time value: oneDNN builds it into its
  // primitive and the JIT into its kernel.
  std::int64_t norm_epsilon_bits = 0;

  [[nodiscard]] int rank() const { return spatial_dims + 2; }
  [[nodiscard]] bool is_conv() const { return kind == OpKind::conv; }
  [[nodiscard]] bool is_pool() const { return kind == OpKind::pool; }
  [[nodiscard]] bool has_epilogue() const {
    return activation != Activation::identity || epilogue_operands != 0;
  }
  [[nodiscard]] bool has_bias() const { return (epilogue_operands & kEpilogueBias) != 0; }
  [[nodiscard]] bool has_residual() const { return (epilogue_operands & kEpilogueResidual) != 0; }
  // Stride 1 along every spatial axis (a conv's or pool's window).
  [[nodiscard]] bool has_unit_stride() const {
    for (int i = 0; i < spatial_dims; ++i)
      if (stride[static_cast<std::size_t>(i)] != 1) return false;
    return true;
  }
  [[nodiscard]] bool is_batchnorm() const { return kind == OpKind::batchnorm; }
  [[nodiscard]] bool is_resize() const { return kind == OpKind::resize; }
  [[nodiscard]] bool has_norm_flag(NormFlag flag) const { return (norm_flags & flag) != 0; }
  // The scale of spatial dim i, or 0 when it is derived from the shapes.
  [[nodiscard]] double resize_scale(int i) const;
  [[nodiscard]] double norm_epsilon() const;
  // Conv, pool: the parameters a window slides with (stride, pads...).
  [[nodiscard]] bool has_window() const { return is_conv() || is_pool(); }

  friend bool operator==(const OpDescriptor&, const OpDescriptor&) = default;
};

// The hash and equality compare every byte, so the layout must have none
// that are padding.
static_assert(std::has_unique_object_representations_v<OpDescriptor>);

// 64-bit hash of the whole descriptor, for the in-memory kernel table.
[[nodiscard]] std::uint64_t hash_descriptor(const OpDescriptor& desc);

struct OpDescriptorHash {
  std::size_t operator()(const OpDescriptor& d) const { return hash_descriptor(d); }
};

// Strides of a densely packed tensor: channels first (NCHW) or last (NHWC).
[[nodiscard]] Dims5 contiguous_strides(const Dims5& dims, int rank, bool channels_last);

// "conv", "pool", "bias_grad", "batchnorm", "resize": the JSON form's names.
[[nodiscard]] std::string_view op_kind_name(OpKind kind);
[[nodiscard]] std::string_view direction_name(Direction direction);
[[nodiscard]] std::string_view pool_mode_name(PoolingMode mode);
// "identity", "relu", "silu", "sigmoid": the names in descriptor names and the CLI.
[[nodiscard]] std::string_view activation_name(Activation activation);
// The names in descriptor names and the CLI: "nearest", "nearest-ceil",
// "nearest-round-prefer-floor", "nearest-round-prefer-ceil", "linear";
// "asymmetric", "half-pixel", "pytorch-half-pixel", "align-corners",
// "tf-half-pixel-for-nn".
[[nodiscard]] std::string_view resize_mode_name(ResizeMode mode);
[[nodiscard]] std::string_view resize_coordinates_name(ResizeCoordinates coordinates);
// The inverses of the two above; nullopt for an unknown name.
[[nodiscard]] std::optional<ResizeMode> parse_resize_mode(std::string_view name);
[[nodiscard]] std::optional<ResizeCoordinates> parse_resize_coordinates(std::string_view name);
// The dtype of BatchNorm's statistics and parameters for data of `dtype`:
// f64 for f64 (so gradcheck sees f64 throughout), else f32 (as cuDNN).
[[nodiscard]] DataType norm_param_dtype(DataType dtype);

}  // namespace convjit
