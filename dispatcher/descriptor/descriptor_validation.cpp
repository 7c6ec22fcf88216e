#include "dispatcher/descriptor/descriptor_validation.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>
#include <span>

#include "dispatcher/descriptor/operand_layout.hpp"
#include "dispatcher/descriptor/validation_checks.hpp"

namespace convjit {

namespace {

using namespace validation;

bool has_valid_structure(const OpDescriptor& d) {
  switch (d.kind) {
    case OpKind::conv:
      return d.pool_mode == PoolingMode::none &&
             (d.direction == Direction::fwd || d.direction == Direction::bwddata ||
              d.direction == Direction::bwdfilt);
    case OpKind::pool:
      return d.pool_mode != PoolingMode::none &&
             (d.direction == Direction::fwd || d.direction == Direction::bwd);
    case OpKind::bias_grad:
      return d.pool_mode == PoolingMode::none && d.direction == Direction::bwd;
    case OpKind::batchnorm:
    case OpKind::resize:
      return d.pool_mode == PoolingMode::none &&
             (d.direction == Direction::fwd || d.direction == Direction::bwd);
  }
  return false;
}

// Spatial parameters and filter/window sizes are 32-bit, as in cuDNN; the
// bound also keeps extent and output-size arithmetic far from overflow.
constexpr std::int64_t kMaxSpatialParam = 2147483647;

void check_spatial_bound(Checker& c, const char* name, int i, std::int64_t value) {
  c.require(value <= kMaxSpatialParam, "{}[{}] = {} exceeds {}; spatial parameters are 32-bit",
            name, i, value, kMaxSpatialParam);
}

void check_spatial_params(Checker& c, const OpDescriptor& d) {
  const int s = d.spatial_dims;
  for (int i = 0; i < s; ++i) {
    const auto at = static_cast<std::size_t>(i);
    check_spatial_bound(c, "stride", i, d.stride[at]);
    check_spatial_bound(c, "dilation", i, d.dilation[at]);
    check_spatial_bound(c, "pad begin", i, d.pad_begin[at]);
    check_spatial_bound(c, "pad end", i, d.pad_end[at]);
    check_spatial_bound(c, d.is_conv() ? "w spatial shape" : "window", i,
                        d.is_conv() ? d.w_dims[at + 2] : d.window[at]);
  }
  check_unused_slots_zero(c, "pad", "", d.pad_begin, s);
  check_unused_slots_zero(c, "pad end", "", d.pad_end, s);
  check_unused_slots_zero(c, "stride", "", d.stride, s);
  check_unused_slots_zero(c, "dilation", "", d.dilation, s);
  for (int i = 0; i < s; ++i) {
    const auto at = static_cast<std::size_t>(i);
    c.require(d.stride[at] >= 1, "stride[{}] = {} must be at least 1", i, d.stride[at]);
    c.require(d.dilation[at] >= 1, "dilation[{}] = {} must be at least 1", i, d.dilation[at]);
    c.require(d.pad_begin[at] >= 0, "pad begin[{}] = {} must be non-negative", i, d.pad_begin[at]);
    c.require(d.pad_end[at] >= 0, "pad end[{}] = {} must be non-negative", i, d.pad_end[at]);
  }
}

WindowGeometry geometry(const OpDescriptor& d, int i) {
  const auto at = static_cast<std::size_t>(i);
  const std::int64_t window = d.is_conv() ? d.w_dims[at + 2] : d.window[at];
  return {d.x_dims[at + 2], window, d.pad_begin[at], d.pad_end[at], d.stride[at], d.dilation[at]};
}

void check_conv_params(Checker& c, const OpDescriptor& d) {
  const auto n = slot_names(d);
  const std::int64_t channels = d.x_dims[1];
  const std::int64_t filters = d.w_dims[0];
  c.require(d.groups >= 1, "groups = {} must be at least 1", d.groups);
  if (c.failed()) return;
  // groups may be any int64 here: nothing may multiply by it.
  c.require(channels % d.groups == 0,
            "groups = {} does not divide {} channels C = {}; use a groups value that divides "
            "both C and K",
            d.groups, n.x, channels);
  c.require(filters % d.groups == 0,
            "groups = {} does not divide the filter count K = {} ({} shape[0]); use a groups "
            "value that divides both C and K",
            d.groups, filters, n.w);
  if (c.failed()) return;
  c.require(d.w_dims[1] == channels / d.groups,
            "channel mismatch: {} has C = {} in groups = {}, but {} shape[1] = {}; {} shape[1] "
            "must be C / groups = {}",
            n.x, channels, d.groups, n.w, d.w_dims[1], n.w, channels / d.groups);
  // Any non-negative padding, as PyTorch, ONNX and cuDNN take: outputs
  // whose window sees only padding get alpha * 0 (and the epilogue) + beta * y.
}

void check_pool_params(Checker& c, const OpDescriptor& d) {
  check_unused_slots_zero(c, "window", "", d.window, d.spatial_dims);
  for (int i = 0; i < d.spatial_dims; ++i) {
    const WindowGeometry g = geometry(d, i);
    c.require(g.window >= 1, "window[{}] = {} must be at least 1", i, g.window);
    if (c.failed()) return;
    c.require(d.pool_mode == PoolingMode::max || g.dilation == 1,
              "dilation[{}] = {}: dilation is supported for max pooling only; use 1", i,
              g.dilation);
    // ONNX's rule, wider than PyTorch's half window: padding stays below
    // the window on each side, so an undilated window always overlaps the
    // input.  Max pools pad with -inf, average pools count the padding
    // only in avg_include_pad's divisor.
    c.require(g.pad_begin < g.extent() && g.pad_end < g.extent(),
              "padding [{}, {}] in spatial dim {} must be smaller than the window extent {}; "
              "reduce the padding to at most {}",
              g.pad_begin, g.pad_end, i, g.extent(), g.extent() - 1);
  }
}

void check_output_shape(Checker& c, const OpDescriptor& d) {
  const auto n = slot_names(d);
  const int rank = d.rank();
  const Dims5 floor_dims = implied_y_dims(d, Rounding::floor);
  for (int i = 2; i < rank; ++i)
    c.require(
        floor_dims[static_cast<std::size_t>(i)] > 0 ||
            (d.is_pool() && implied_y_dims(d, Rounding::ceil)[static_cast<std::size_t>(i)] > 0),
        "the window does not fit in spatial dim {}: {} size {} plus padding is smaller "
        "than the window extent {}",
        i - 2, n.x, d.x_dims[static_cast<std::size_t>(i)], geometry(d, i - 2).extent());
  if (c.failed()) return;
  const bool matches_floor = d.y_dims == floor_dims;
  if (d.is_conv() || matches_floor) {
    c.require(matches_floor,
              "{} shape {} is inconsistent with {}, {} and the parameters: it "
              "should be {}",
              n.y, used(d.y_dims, rank), n.x, n.w, used(floor_dims, rank));
    return;
  }
  const Dims5 ceil_dims = implied_y_dims(d, Rounding::ceil);
  c.require(d.y_dims == ceil_dims,
            "{} shape {} is inconsistent with {} and the parameters: it should be {} (or {} "
            "in ceil mode)",
            n.y, used(d.y_dims, rank), n.x, used(floor_dims, rank), used(ceil_dims, rank));
}

void check_output_overlap(Checker& c, const OpDescriptor& d) {
  if (d.kind == OpKind::bias_grad) return;  // db is a contiguous vector
  const auto n = slot_names(d);
  const Slot slot = output_slot(d);
  const char* name = slot == Slot::x ? n.x : slot == Slot::w ? n.w : n.y;
  check_not_overlapping(c, d, name, slot_dims(d, slot), slot_strides(d, slot));
}

bool is_zero(std::span<const std::int64_t> values) {
  return std::all_of(values.begin(), values.end(), [](std::int64_t v) { return v == 0; });
}

bool no_window(const OpDescriptor& d) {
  return is_zero(d.w_dims) && is_zero(d.w_strides) && is_zero(d.window) && is_zero(d.pad_begin) &&
         is_zero(d.pad_end) && is_zero(d.stride) && is_zero(d.dilation) && d.groups == 0;
}

// Fields an op does not use stay zero, so equal ops have equal descriptors.
bool unused_fields_are_zero(const OpDescriptor& d) {
  const bool no_resize = d.resize_mode == ResizeMode::none &&
                         d.resize_coordinates == ResizeCoordinates::asymmetric &&
                         is_zero(d.resize_scale_bits);
  if (d.unused != 0 || (!d.is_batchnorm() && (d.norm_flags != 0 || d.norm_epsilon_bits != 0)) ||
      (!d.is_resize() && !no_resize))
    return false;
  switch (d.kind) {
    case OpKind::conv:
      return is_zero(d.window);
    case OpKind::pool:
      return is_zero(d.w_dims) && is_zero(d.w_strides) && d.groups == 0;
    case OpKind::bias_grad:
      return is_zero(d.x_dims) && is_zero(d.x_strides) && no_window(d);
    case OpKind::batchnorm:
    case OpKind::resize:
      return no_window(d);
  }
  return false;
}

void check_epilogue(Checker& c, const OpDescriptor& d) {
  const auto act = static_cast<std::int32_t>(d.activation);
  c.require(act >= 0 && act <= static_cast<std::int32_t>(Activation::sigmoid),
            "epilogue activation {} is not one of identity (0), relu (1), silu (2), sigmoid (3)",
            act);
  c.require((d.epilogue_operands & ~(kEpilogueBias | kEpilogueResidual)) == 0,
            "epilogue operands {:#x} name unknown operands; use bias (1) and residual (2) only",
            d.epilogue_operands);
  if (d.is_batchnorm()) {
    c.require(d.epilogue_operands == 0 && d.activation != Activation::sigmoid,
              "a batchnorm fuses relu or silu only, with no bias or residual operands");
    return;
  }
  c.require(!d.has_epilogue() || (d.is_conv() && d.direction == Direction::fwd),
            "a fused epilogue (activation {}, operands {:#x}) applies to conv fwd only, not to "
            "{} {}; run the epilogue as a separate op",
            activation_name(d.activation), d.epilogue_operands, direction_name(d.direction),
            d.is_conv() ? "conv" : (d.is_pool() ? "pool" : "resize or bias gradient"));
}

void check_structure(Checker& c, const OpDescriptor& d) {
  c.require(d.spatial_dims >= 1 && d.spatial_dims <= kMaxSpatialDims,
            "spatial dims = {} must be 1, 2 or 3 (tensor rank 3, 4 or 5)", d.spatial_dims);
  c.require(is_valid_dtype(static_cast<int>(d.dtype)),
            "dtype {} is not one of f32, f16, "
            "bf16, f64",
            static_cast<int>(d.dtype));
  c.require(has_valid_structure(d), "direction {} is not valid for this op",
            direction_name(d.direction));
  c.require(unused_fields_are_zero(d), "fields this op does not use must be zero");
  check_epilogue(c, d);
}

}  // namespace

SlotNames slot_names(const OpDescriptor& d) {
  if (d.kind == OpKind::conv) {
    if (d.direction == Direction::bwddata) return {"dx", "w", "dy"};
    if (d.direction == Direction::bwdfilt) return {"x", "dw", "dy"};
    return {"x", "w", "y"};
  }
  if (d.kind == OpKind::pool && d.direction == Direction::bwd) return {"x", "window", "dy"};
  if (d.kind == OpKind::bias_grad) return {"-", "-", "dy"};
  if (d.is_batchnorm()) return {"x", "-", d.direction == Direction::bwd ? "dy" : "y"};
  if (d.is_resize())
    return d.direction == Direction::bwd ? SlotNames{"dx", "-", "dy"} : SlotNames{"x", "-", "y"};
  return {"x", "window", "y"};
}

Dims5 implied_y_dims(const OpDescriptor& d, Rounding rounding) {
  Dims5 y{};
  y[0] = d.x_dims[0];
  y[1] = d.is_conv() ? d.w_dims[0] : d.x_dims[1];
  const Rounding effective = d.is_conv() ? Rounding::floor : rounding;
  for (int i = 0; i < d.spatial_dims; ++i)
    y[static_cast<std::size_t>(i + 2)] = output_size(geometry(d, i), effective);
  return y;
}

Status validate_descriptor(const OpDescriptor& d) {
  Checker c(d);
  check_structure(c, d);
  if (c.failed()) return c.take();
  if (d.is_batchnorm()) {
    check_batchnorm(c, d);
    return c.take();
  }
  if (d.is_resize()) {
    check_resize(c, d);
    return c.take();
  }
  const auto n = slot_names(d);
  if (d.kind == OpKind::bias_grad) {
    check_tensor(c, d, n.y, d.y_dims, d.y_strides);
    check_overflow(c, d, n.y, d.y_dims, d.y_strides);
    return c.take();
  }
  // Root causes first: inputs and parameters, then the y shape they imply.
  // Sizes are bounded before any arithmetic on them can overflow.
  check_tensor(c, d, n.x, d.x_dims, d.x_strides);
  if (d.is_conv()) check_tensor(c, d, n.w, d.w_dims, d.w_strides, /*has_batch=*/false);
  check_overflow(c, d, n.x, d.x_dims, d.x_strides);
  if (d.is_conv()) check_overflow(c, d, n.w, d.w_dims, d.w_strides);
  check_spatial_params(c, d);
  if (c.failed()) return c.take();
  if (d.is_conv()) {
    check_conv_params(c, d);
  } else {
    check_pool_params(c, d);
  }
  if (c.failed()) return c.take();
  check_output_shape(c, d);
  check_tensor(c, d, n.y, d.y_dims, d.y_strides);
  check_overflow(c, d, n.y, d.y_dims, d.y_strides);
  if (c.failed()) return c.take();
  check_output_overlap(c, d);
  return c.take();
}

}  // namespace convjit
