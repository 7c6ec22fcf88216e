// Validation of batchnorm descriptors (descriptor_validation.hpp).
#include <cmath>

#include "dispatcher/descriptor/validation_checks.hpp"

namespace convjit::validation {

namespace {

constexpr std::int32_t kKnownNormFlags =
    kNormScale | kNormShift | kNormInference | kNormOnnxRunningStats | kNormGradMask;

void check_flags(Checker& c, const OpDescriptor& d) {
  c.require((d.norm_flags & ~kKnownNormFlags) == 0,
            "batchnorm flags {:#x} name unknown bits; use the NormFlag values only", d.norm_flags);
  const std::int32_t grads = d.norm_flags & kNormGradMask;
  if (d.direction == Direction::fwd) {
    c.require(grads == 0, "a forward computes no gradients; clear the gradient flags {:#x}",
              grads);
  } else {
    c.require(grads != 0,
              "a backward must compute at least one of dx, dscale and dshift (the grad mask is "
              "empty)");
  }
  c.require(!d.has_norm_flag(kNormOnnxRunningStats) ||
                (d.direction == Direction::fwd && !d.has_norm_flag(kNormInference)),
            "ONNX running statistics apply to a training forward only, which updates them");
}

// PyTorch's rule (torch.nn.functional.batch_norm): a batch of one value per
// channel has no variance to normalise with, and its unbiased variance for
// the running average divides by zero.
void check_values_per_channel(Checker& c, const OpDescriptor& d) {
  if (d.has_norm_flag(kNormInference) || d.direction != Direction::fwd || d.symbolic_batch) return;
  std::int64_t values = d.x_dims[0];
  for (int i = 2; i < d.rank(); ++i) values *= d.x_dims[static_cast<std::size_t>(i)];
  c.require(values > 1,
            "training needs more than one value per channel, but x shape {} has one (N times "
            "the spatial sizes is 1); use a larger batch or inference",
            used(d.x_dims, d.rank()));
}

}  // namespace

void check_batchnorm(Checker& c, const OpDescriptor& d) {
  check_flags(c, d);
  const double epsilon = d.norm_epsilon();
  c.require(std::isfinite(epsilon) && epsilon >= 0 && !std::signbit(epsilon),
            "epsilon = {} must be finite and non-negative (PyTorch's default is 1e-5)", epsilon);
  const bool bwd = d.direction == Direction::bwd;
  const char* y = bwd ? "dy" : "y";
  check_operand(c, d, "x", d.x_dims, d.x_strides, bwd && d.has_norm_flag(kNormGradInput));
  if (c.failed()) return;
  c.require(d.y_dims == d.x_dims, "{} shape {} must equal x shape {}", y, used(d.y_dims, d.rank()),
            used(d.x_dims, d.rank()));
  check_operand(c, d, y, d.y_dims, d.y_strides, !bwd);
  if (c.failed()) return;
  check_values_per_channel(c, d);
}

}  // namespace convjit::validation
