// Validation of resize descriptors (descriptor_validation.hpp).
#include <cmath>

#include "dispatcher/descriptor/validation_checks.hpp"

namespace convjit::validation {

namespace {

void check_modes(Checker& c, const OpDescriptor& d) {
  const auto mode = static_cast<std::int32_t>(d.resize_mode);
  const auto coordinates = static_cast<std::int32_t>(d.resize_coordinates);
  c.require(mode > 0 && mode <= static_cast<std::int32_t>(ResizeMode::linear),
            "resize mode {} is not one of nearest (1), nearest-ceil (2), "
            "nearest-round-prefer-floor (3), nearest-round-prefer-ceil (4), linear (5)",
            mode);
  c.require(coordinates >= 0 &&
                coordinates <= static_cast<std::int32_t>(ResizeCoordinates::tf_half_pixel_for_nn),
            "resize coordinates {} is not one of asymmetric (0), half-pixel (1), "
            "pytorch-half-pixel (2), align-corners (3), tf-half-pixel-for-nn (4)",
            coordinates);
  if (c.failed()) return;
  c.require(d.resize_mode != ResizeMode::linear ||
                d.resize_coordinates != ResizeCoordinates::tf_half_pixel_for_nn,
            "tf-half-pixel-for-nn applies to nearest modes only; use half-pixel for linear");
}

// Each given scale is positive and finite, and y's size is floor(in * scale)
// as PyTorch and ONNX compute it.
void check_scales(Checker& c, const OpDescriptor& d, const char* y) {
  check_unused_slots_zero(c, "scale", "", d.resize_scale_bits, d.spatial_dims);
  for (int i = 0; i < d.spatial_dims; ++i) {
    const double scale = d.resize_scale(i);
    if (d.resize_scale_bits[static_cast<std::size_t>(i)] == 0) continue;
    c.require(std::isfinite(scale) && scale > 0,
              "scale[{}] = {} must be positive and finite (or 0 to derive it from the shapes)", i,
              scale);
    if (c.failed()) return;
    const auto at = static_cast<std::size_t>(i + 2);
    const double size = std::floor(static_cast<double>(d.x_dims[at]) * scale);
    c.require(size >= 1,
              "scale[{}] = {} gives an empty output from size {} (floor({} * {}) = 0); use a "
              "scale of at least {}",
              i, scale, d.x_dims[at], d.x_dims[at], scale, 1.0 / static_cast<double>(d.x_dims[at]));
    c.require(size == static_cast<double>(d.y_dims[at]),
              "{} shape[{}] = {} is not floor({} * scale {}) = {}; pass the output size the "
              "scale gives, or no scale",
              y, i + 2, d.y_dims[at], d.x_dims[at], scale, size);
  }
}

}  // namespace

void check_resize(Checker& c, const OpDescriptor& d) {
  check_modes(c, d);
  const bool bwd = d.direction == Direction::bwd;
  const char* x = bwd ? "dx" : "x";
  const char* y = bwd ? "dy" : "y";
  check_operand(c, d, x, d.x_dims, d.x_strides, bwd);
  if (c.failed()) return;
  c.require(d.y_dims[0] == d.x_dims[0] && d.y_dims[1] == d.x_dims[1],
            "{} batch and channels ({}, {}) must equal {}'s ({}, {}): resize scales spatial dims "
            "only",
            y, d.y_dims[0], d.y_dims[1], x, d.x_dims[0], d.x_dims[1]);
  check_scales(c, d, y);
  check_operand(c, d, y, d.y_dims, d.y_strides, !bwd);
}

}  // namespace convjit::validation
