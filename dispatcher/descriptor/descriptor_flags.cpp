#include "dispatcher/descriptor/descriptor_flags.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <span>
#include <vector>

#include "dispatcher/descriptor/descriptor_validation.hpp"

namespace convjit {

namespace {

template <std::size_t N>
std::string list(const std::array<std::int64_t, N>& values, int count) {
  return fmt::format("{}",
                     fmt::join(std::span(values.data(), static_cast<std::size_t>(count)), ","));
}

Dims5 with_concrete_batch(Dims5 dims, const OpDescriptor& d) {
  if (d.symbolic_batch) dims[0] = 1;
  return dims;
}

void append_spatial(std::string& out, const OpDescriptor& d) {
  const int s = d.spatial_dims;
  out += fmt::format(" --stride {}", list(d.stride, s));
  if (d.pad_begin == d.pad_end) {
    out += fmt::format(" --pad {}", list(d.pad_begin, s));
  } else {
    out += fmt::format(" --pad-begin {} --pad-end {}", list(d.pad_begin, s), list(d.pad_end, s));
  }
  out += fmt::format(" --dilation {}", list(d.dilation, s));
}

std::string batchnorm_flags(const OpDescriptor& d) {
  std::string out;
  if (d.has_norm_flag(kNormInference)) out += " --inference";
  if (!d.has_norm_flag(kNormScale)) out += " --no-scale";
  if (!d.has_norm_flag(kNormShift)) out += " --no-shift";
  if (d.has_norm_flag(kNormOnnxRunningStats)) out += " --onnx";
  if (d.norm_epsilon() != kDefaultNormEpsilon) out += fmt::format(" --eps {}", d.norm_epsilon());
  if (d.direction == Direction::bwd && (d.norm_flags & kNormGradMask) != kNormGradMask) {
    std::vector<std::string_view> grads;
    for (auto [flag, name] : {std::pair{kNormGradInput, "dx"}, std::pair{kNormGradScale, "dscale"},
                              std::pair{kNormGradShift, "dshift"}})
      if (d.has_norm_flag(flag)) grads.push_back(name);
    out += fmt::format(" --grads {}", fmt::join(grads, ","));
  }
  if (d.activation != Activation::identity)
    out += fmt::format(" --act {}", activation_name(d.activation));
  return out;
}

std::string resize_flags(const OpDescriptor& d) {
  std::string out = fmt::format(" --y {} --mode {} --coordinates {}",
                                list(with_concrete_batch(d.y_dims, d), d.rank()),
                                resize_mode_name(d.resize_mode),
                                resize_coordinates_name(d.resize_coordinates));
  if (d.resize_scale_bits != Dims3{}) {
    std::vector<double> scales;
    for (int i = 0; i < d.spatial_dims; ++i) scales.push_back(d.resize_scale(i));
    out += fmt::format(" --scale {}", fmt::join(scales, ","));
  }
  return out;
}

// batchnorm and resize: x and y, then the op's own flags.
std::string norm_or_resize_flags(const OpDescriptor& d) {
  const int rank = d.rank();
  return fmt::format("{} --x {} --x-strides {}{} --y-strides {}",
                     d.is_batchnorm() ? "batchnorm" : "resize",
                     list(with_concrete_batch(d.x_dims, d), rank), list(d.x_strides, rank),
                     d.is_batchnorm() ? batchnorm_flags(d) : resize_flags(d),
                     list(d.y_strides, rank));
}

}  // namespace

std::string descriptor_flags(const OpDescriptor& d) {
  const int rank = d.rank();
  std::string out;
  if (d.is_batchnorm() || d.is_resize()) {
    out = norm_or_resize_flags(d);
  } else if (d.kind == OpKind::bias_grad) {
    out = fmt::format("bias --dy {} --dy-strides {}", list(with_concrete_batch(d.y_dims, d), rank),
                      list(d.y_strides, rank));
  } else {
    out = fmt::format("{} --x {} --x-strides {}", d.is_conv() ? "conv" : "pool",
                      list(with_concrete_batch(d.x_dims, d), rank), list(d.x_strides, rank));
    if (d.is_conv()) {
      out += fmt::format(" --w {}", list(d.w_dims, rank));
      if (d.w_strides != contiguous_strides(d.w_dims, rank, false))
        out += fmt::format(" --w-strides {}", list(d.w_strides, rank));
    } else {
      out += fmt::format(" --window {} --mode {}", list(d.window, d.spatial_dims),
                         pool_mode_name(d.pool_mode));
      // Ceil mode shows only through y's shape.
      if (d.y_dims != implied_y_dims(d, Rounding::floor)) out += " --ceil";
    }
    out += fmt::format(" --y-strides {}", list(d.y_strides, rank));
    append_spatial(out, d);
    if (d.is_conv()) out += fmt::format(" --groups {}", d.groups);
    if (d.activation != Activation::identity)
      out += fmt::format(" --act {}", activation_name(d.activation));
    if (d.has_bias()) out += " --bias";
    if (d.has_residual()) out += " --residual";
  }
  out += fmt::format(" --dtype {}", dtype_name(d.dtype));
  if (d.kind != OpKind::bias_grad) out += fmt::format(" --op {}", direction_name(d.direction));
  if (d.symbolic_batch) out += " --symbolic-batch";
  return out;
}

}  // namespace convjit
