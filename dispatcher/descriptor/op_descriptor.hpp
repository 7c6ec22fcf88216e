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
#include <string_view>
#include <type_traits>

#include "dispatcher/descriptor/dtype.hpp"

namespace convjit {

inline constexpr int kMaxRank = 5;
inline constexpr int kMaxSpatialDims = 3;

using Dims5 = std::array<std::int64_t, kMaxRank>;
using Dims3 = std::array<std::int64_t, kMaxSpatialDims>;

enum class OpKind : std::int32_t { conv, pool, bias_grad };

// Conv uses fwd/bwddata/bwdfilt, pool fwd/bwd, bias_grad only bwd.
enum class Direction : std::int32_t { fwd, bwddata, bwdfilt, bwd };

enum class PoolingMode : std::int32_t { none, max, avg_exclude_pad, avg_include_pad };

// A conv fwd's fused epilogue: y = act(alpha conv(x, w) + bias [+ residual]) + beta y.
enum class Activation : std::int32_t { identity, relu, silu, sigmoid };
// Which extra operands the epilogue adds (a bit mask).
enum EpilogueOperand : std::int32_t { kEpilogueBias = 1, kEpilogueResidual = 2 };

// Slot meaning per op (LBANN's convention for conv):
//   conv fwd (x, w, y)   conv bwddata (dx, w, dy)   conv bwdfilt (x, dw, dy)
//   pool fwd (x, -, y)   pool bwd (x and dx, -, dy) bias_grad (-, -, dy)
struct OpDescriptor {
  OpKind kind = OpKind::conv;
  Direction direction = Direction::fwd;
  PoolingMode pool_mode = PoolingMode::none;
  DataType dtype = DataType::f32;
  std::int32_t spatial_dims = 0;
  std::int32_t symbolic_batch = 0;  // batch entries are the literal B in names
  // Conv fwd only; identity and no operands is the plain conv.
  Activation activation = Activation::identity;
  std::int32_t epilogue_operands = 0;  // EpilogueOperand bits

  Dims5 x_dims{}, x_strides{};
  Dims5 w_dims{}, w_strides{};  // conv only
  Dims5 y_dims{}, y_strides{};
  Dims3 window{};  // pool only
  Dims3 pad_begin{}, pad_end{}, stride{}, dilation{};
  std::int64_t groups = 0;  // conv only

  [[nodiscard]] int rank() const { return spatial_dims + 2; }
  [[nodiscard]] bool is_conv() const { return kind == OpKind::conv; }
  [[nodiscard]] bool is_pool() const { return kind == OpKind::pool; }
  [[nodiscard]] bool has_epilogue() const {
    return activation != Activation::identity || epilogue_operands != 0;
  }
  [[nodiscard]] bool has_bias() const { return (epilogue_operands & kEpilogueBias) != 0; }
  [[nodiscard]] bool has_residual() const { return (epilogue_operands & kEpilogueResidual) != 0; }

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

[[nodiscard]] std::string_view direction_name(Direction direction);
[[nodiscard]] std::string_view pool_mode_name(PoolingMode mode);
// "identity", "relu", "silu", "sigmoid": the names in descriptor names and the CLI.
[[nodiscard]] std::string_view activation_name(Activation activation);

}  // namespace convjit
