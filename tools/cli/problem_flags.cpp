#include "problem_flags.hpp"

#include <fmt/format.h>

#include "cli_status.hpp"
#include "convjit/convjit.h"
#include "dispatcher/descriptor/descriptor_builder.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/descriptor_validation.hpp"
#include "integer_flags.hpp"

namespace convjit::cli {

namespace {

void require_count(const std::vector<std::int64_t>& values, std::size_t count, const char* flag,
                   const char* what) {
  if (values.size() != count)
    throw UsageError(fmt::format("{} needs {} comma-separated values ({}), got {}", flag, count,
                                 what, values.size()));
}

convjit_tensor_desc_t tensor(const std::vector<std::int64_t>& dims,
                             const std::vector<std::int64_t>& strides, convjit_dtype_t dtype,
                             bool channels_last, const char* dims_flag, const char* strides_flag) {
  if (dims.size() < 3 || dims.size() > 5)
    throw UsageError(fmt::format("{} needs 3 to 5 comma-separated values (N,C,[D,][H,]W), got {}",
                                 dims_flag, dims.size()));
  convjit_tensor_desc_t t{};
  const int rank = static_cast<int>(dims.size());
  if (convjit_tensor_desc_init(&t, dtype, rank, dims.data(),
                               channels_last ? CONVJIT_LAYOUT_NHWC : CONVJIT_LAYOUT_NCHW) !=
      CONVJIT_STATUS_SUCCESS)
    throw UsageError(fmt::format("{}: {}", dims_flag, convjit_last_error_message()));
  if (!strides.empty()) {
    require_count(strides, dims.size(), strides_flag, "one stride per dim of the tensor");
    for (std::size_t i = 0; i < strides.size(); ++i) t.strides[i] = strides[i];
  }
  return t;
}

// Copies a spatial flag into the params array, or leaves the default.
void spatial(const std::vector<std::int64_t>& values, int spatial_dims, const char* flag,
             int64_t* target) {
  if (values.empty()) return;
  require_count(values, static_cast<std::size_t>(spatial_dims), flag, "one per spatial dim");
  for (int i = 0; i < spatial_dims; ++i) target[i] = values[static_cast<std::size_t>(i)];
}

template <class Params>
void fill_padding(const ProblemFlags& f, int spatial_dims, Params& p) {
  spatial(f.pad, spatial_dims, "--pad", p.pad_begin);
  spatial(f.pad, spatial_dims, "--pad", p.pad_end);
  spatial(f.pad_begin, spatial_dims, "--pad-begin", p.pad_begin);
  spatial(f.pad_end, spatial_dims, "--pad-end", p.pad_end);
  spatial(f.stride, spatial_dims, "--stride", p.stride);
  spatial(f.dilation, spatial_dims, "--dilation", p.dilation);
}

convjit_dtype_t parse_dtype_flag(const std::string& text) {
  const auto dtype = parse_dtype(text);
  if (!dtype) throw UsageError(fmt::format("--dtype {} is not one of f32, f16, bf16, f64", text));
  return static_cast<convjit_dtype_t>(*dtype);
}

bool channels_last(const ProblemFlags& f) { return f.layout == "nhwc"; }

OpDescriptor unwrap(Result<OpDescriptor> result) {
  if (!result.is_ok()) throw UsageError(result.status().message());
  return std::move(result).value();
}

// --act, --bias and --residual: a fused epilogue, for --op fwd only.
OpDescriptor with_epilogue_flags(const ProblemFlags& f, OpDescriptor d) {
  for (Activation a : {Activation::identity, Activation::relu, Activation::silu,
                       Activation::sigmoid})
    if (activation_name(a) == f.act) d.activation = a;
  d.epilogue_operands = (f.bias ? kEpilogueBias : 0) | (f.residual ? kEpilogueResidual : 0);
  if (d.has_epilogue() && d.direction != Direction::fwd)
    throw UsageError(fmt::format(
        "--act, --bias and --residual fuse an epilogue into --op fwd only, not --op {}", f.op));
  if (Status s = validate_descriptor(d); !s.is_ok()) throw UsageError(s.message());
  return d;
}

OpDescriptor build_conv(const ProblemFlags& f, convjit_dtype_t dtype) {
  const convjit_tensor_desc_t x =
      tensor(f.x, f.x_strides, dtype, channels_last(f), "--x", "--x-strides");
  if (f.w.empty()) throw UsageError("--w is required: K,C/groups,[T,][R,]S");
  require_count(f.w, f.x.size(), "--w", "K,C/groups and one filter size per spatial dim");
  const convjit_tensor_desc_t w = tensor(f.w, f.w_strides, dtype, false, "--w", "--w-strides");
  convjit_conv_params_t p{};
  (void)convjit_conv_params_init(&p, x.rank - 2);
  p.groups = f.groups;
  fill_padding(f, x.rank - 2, p);
  const Direction direction = f.op == "bwddata"   ? Direction::bwddata
                              : f.op == "bwdfilt" ? Direction::bwdfilt
                                                  : Direction::fwd;
  OpDescriptor shape = unwrap(make_conv_descriptor(&p, direction, &x, &w, nullptr));
  std::vector<std::int64_t> y_dims(shape.y_dims.begin(), shape.y_dims.begin() + x.rank);
  const convjit_tensor_desc_t y =
      tensor(y_dims, f.y_strides, dtype, channels_last(f), "--x", "--y-strides");
  OpDescriptor d = unwrap(make_conv_descriptor(&p, direction, &x, &w, &y));
  return with_epilogue_flags(f, d);
}

OpDescriptor build_pool(const ProblemFlags& f, convjit_dtype_t dtype) {
  const convjit_tensor_desc_t x =
      tensor(f.x, f.x_strides, dtype, channels_last(f), "--x", "--x-strides");
  const convjit_pool_mode_t mode = f.mode == "avg"               ? CONVJIT_POOL_AVG_EXCLUDE_PAD
                                   : f.mode == "avg-include-pad" ? CONVJIT_POOL_AVG_INCLUDE_PAD
                                                                 : CONVJIT_POOL_MAX;
  convjit_pool_params_t p{};
  (void)convjit_pool_params_init(&p, x.rank - 2, mode);
  if (f.window.empty()) throw UsageError("--window is required: one size per spatial dim");
  spatial(f.window, x.rank - 2, "--window", p.window);
  fill_padding(f, x.rank - 2, p);
  const Direction direction = f.op == "bwd" ? Direction::bwd : Direction::fwd;
  OpDescriptor shape = unwrap(make_pool_descriptor(&p, direction, &x, nullptr, f.ceil));
  std::vector<std::int64_t> y_dims(shape.y_dims.begin(), shape.y_dims.begin() + x.rank);
  const convjit_tensor_desc_t y =
      tensor(y_dims, f.y_strides, dtype, channels_last(f), "--x", "--y-strides");
  return unwrap(make_pool_descriptor(&p, direction, &x, &y, f.ceil));
}

OpDescriptor build_bias(const ProblemFlags& f, convjit_dtype_t dtype) {
  const convjit_tensor_desc_t dy =
      tensor(f.dy, f.dy_strides, dtype, channels_last(f), "--dy", "--dy-strides");
  return unwrap(make_bias_grad_descriptor(&dy));
}

OpDescriptor build_batchnorm(const ProblemFlags& f, convjit_dtype_t dtype) {
  const convjit_tensor_desc_t x =
      tensor(f.x, f.x_strides, dtype, channels_last(f), "--x", "--x-strides");
  const convjit_tensor_desc_t y =
      tensor(f.x, f.y_strides, dtype, channels_last(f), "--x", "--y-strides");
  convjit_batchnorm_params_t p{};
  (void)convjit_batchnorm_params_init(&p);
  p.onnx_running_stats = f.onnx ? 1 : 0;
  p.epsilon = f.epsilon;
  p.activation = f.act == "relu"   ? CONVJIT_ACTIVATION_RELU
                 : f.act == "silu" ? CONVJIT_ACTIVATION_SILU
                                   : CONVJIT_ACTIVATION_IDENTITY;
  const bool bwd = f.op == "bwd";
  std::int32_t flags = (f.no_scale ? 0 : kNormScale) | (f.no_shift ? 0 : kNormShift) |
                       (f.inference ? kNormInference : 0);
  if (!bwd && !f.grads.empty()) throw UsageError("--grads applies to --op bwd only");
  if (bwd && f.grads.empty()) flags |= kNormGradMask;
  for (const std::string& g : f.grads)
    flags |= g == "dx" ? kNormGradInput : g == "dscale" ? kNormGradScale : kNormGradShift;
  return unwrap(
      make_batchnorm_descriptor(&p, bwd ? Direction::bwd : Direction::fwd, flags, &x, &y));
}

OpDescriptor build_resize(const ProblemFlags& f, convjit_dtype_t dtype) {
  const convjit_tensor_desc_t x =
      tensor(f.x, f.x_strides, dtype, channels_last(f), "--x", "--x-strides");
  convjit_resize_params_t p{};
  const auto mode = static_cast<convjit_resize_mode_t>(
      *parse_resize_mode(f.resize_mode));  // CLI::IsMember checked the name
  (void)convjit_resize_params_init(&p, x.rank - 2, mode);
  if (!f.coordinates.empty())
    p.coordinates = static_cast<convjit_resize_coordinates_t>(
        *parse_resize_coordinates(f.coordinates));
  if (!f.scale.empty()) {
    if (f.scale.size() != static_cast<std::size_t>(x.rank - 2))
      throw UsageError(fmt::format("--scale needs one value per spatial dim ({}), got {}",
                                   x.rank - 2, f.scale.size()));
    for (std::size_t i = 0; i < f.scale.size(); ++i) p.scale[i] = f.scale[i];
  }
  if (f.y.empty() && f.scale.empty()) throw UsageError("give --y (the output shape) or --scale");
  const Direction direction = f.op == "bwd" ? Direction::bwd : Direction::fwd;
  std::vector<std::int64_t> y_dims = f.y;
  if (y_dims.empty()) {
    const OpDescriptor shape = unwrap(make_resize_descriptor(&p, direction, &x, nullptr));
    y_dims.assign(shape.y_dims.begin(), shape.y_dims.begin() + x.rank);
  }
  const convjit_tensor_desc_t y =
      tensor(y_dims, f.y_strides, dtype, channels_last(f), "--y", "--y-strides");
  return unwrap(make_resize_descriptor(&p, direction, &x, &y));
}

void add_batchnorm_flags(CLI::App& c, ProblemFlags& f) {
  c.add_option("--op", f.op, "direction")->check(CLI::IsMember({"fwd", "bwd"}));
  c.add_flag("--inference", f.inference, "normalise with the running statistics");
  c.add_flag("--no-scale", f.no_scale, "no scale (gamma) operand: 1");
  c.add_flag("--no-shift", f.no_shift, "no shift (beta) operand: 0");
  c.add_flag("--onnx", f.onnx, "fwd training: ONNX's running update (population variance)");
  c.add_option("--eps", f.epsilon, "epsilon, added to the variance (default 1e-5)");
  c.add_option("--grads", f.grads, "bwd: the gradients to compute (default all)")
      ->delimiter(',')
      ->check(CLI::IsMember({"dx", "dscale", "dshift"}));
  c.add_option("--act", f.act, "the fused activation after the shift")
      ->check(CLI::IsMember({"identity", "relu", "silu"}));
}

void add_resize_flags(CLI::App& c, ProblemFlags& f) {
  add_integer_list_flag(c, "--y", f.y, "y shape N,C,[D,][H,]W (or give --scale)");
  c.add_option("--op", f.op, "direction")->check(CLI::IsMember({"fwd", "bwd"}));
  c.add_option("--mode", f.resize_mode, "nearest rounding or linear")
      ->check(CLI::IsMember({"nearest", "nearest-ceil", "nearest-round-prefer-floor",
                             "nearest-round-prefer-ceil", "linear"}));
  c.add_option("--coordinates", f.coordinates,
               "coordinate transformation (default: asymmetric for nearest, half-pixel for "
               "linear)")
      ->check(CLI::IsMember({"asymmetric", "half-pixel", "pytorch-half-pixel", "align-corners",
                             "tf-half-pixel-for-nn"}));
  c.add_option("--scale", f.scale, "out/in per spatial dim as given (default: from the shapes)")
      ->delimiter(',');
}

}  // namespace

void add_problem_flags(CLI::App& c, ProblemKind kind, ProblemFlags& f) {
  if (kind == ProblemKind::bias) {
    add_integer_list_flag(c, "--dy", f.dy, "dy shape N,K,[D,][H,]W")->required();
    add_integer_list_flag(c, "--dy-strides", f.dy_strides,
                          "dy strides (default: contiguous in --layout)");
  } else if (kind == ProblemKind::batchnorm || kind == ProblemKind::resize) {
    add_integer_list_flag(c, "--x", f.x, "x shape N,C,[D,][H,]W")->required();
    add_integer_list_flag(c, "--x-strides", f.x_strides,
                          "x strides in elements (default: contiguous in --layout)");
    add_integer_list_flag(c, "--y-strides", f.y_strides,
                          "y strides (default: contiguous in --layout)");
    if (kind == ProblemKind::batchnorm) {
      add_batchnorm_flags(c, f);
    } else {
      add_resize_flags(c, f);
    }
  } else {
    add_integer_list_flag(c, "--x", f.x, "x shape N,C,[D,][H,]W")->required();
    add_integer_list_flag(c, "--x-strides", f.x_strides,
                          "x strides in elements (default: contiguous in --layout)");
    add_integer_list_flag(c, "--y-strides", f.y_strides,
                          "y strides (default: contiguous in --layout)");
    add_integer_list_flag(c, "--stride", f.stride, "stride per spatial dim (default 1)");
    auto* pad =
        add_integer_list_flag(c, "--pad", f.pad, "symmetric padding per spatial dim (default 0)");
    auto* begin =
        add_integer_list_flag(c, "--pad-begin", f.pad_begin, "padding before, per spatial dim");
    auto* end = add_integer_list_flag(c, "--pad-end", f.pad_end, "padding after, per spatial dim");
    pad->excludes(begin)->excludes(end);
    add_integer_list_flag(c, "--dilation", f.dilation, "dilation per spatial dim (default 1)");
  }
  if (kind == ProblemKind::conv) {
    add_integer_list_flag(c, "--w", f.w, "w shape K,C/groups,[T,][R,]S")->required();
    add_integer_list_flag(c, "--w-strides", f.w_strides,
                          "w strides (default: contiguous K,C,T,R,S)");
    add_integer_flag(c, "--groups", f.groups, "groups (C/groups channels per filter; default 1)");
    c.add_option("--op", f.op, "direction")->check(CLI::IsMember({"fwd", "bwddata", "bwdfilt"}));
    c.add_option("--act", f.act, "fwd: the fused epilogue's activation")
        ->check(CLI::IsMember({"identity", "relu", "silu", "sigmoid"}));
    c.add_flag("--bias", f.bias, "fwd: the fused epilogue adds a bias per filter");
    c.add_flag("--residual", f.residual, "fwd: the fused epilogue adds a residual of y's shape");
  }
  if (kind == ProblemKind::pool) {
    add_integer_list_flag(c, "--window", f.window, "window per spatial dim")->required();
    c.add_option("--mode", f.mode, "pooling mode")
        ->check(CLI::IsMember({"max", "avg", "avg-include-pad"}));
    c.add_option("--op", f.op, "direction")->check(CLI::IsMember({"fwd", "bwd"}));
    c.add_flag("--ceil", f.ceil, "ceil-mode output shape");
  }
  c.add_option("--layout", f.layout, "default stride order")
      ->check(CLI::IsMember({"nchw", "nhwc"}));
  c.add_option("--dtype", f.dtype, "element type")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "f64"}));
  c.add_flag("--symbolic-batch", f.symbolic_batch, "write the batch as B (LBANN symbolic batch)");
}

OpDescriptor build_descriptor(ProblemKind kind, const ProblemFlags& flags) {
  const convjit_dtype_t dtype = parse_dtype_flag(flags.dtype);
  OpDescriptor d = kind == ProblemKind::conv        ? build_conv(flags, dtype)
                   : kind == ProblemKind::pool      ? build_pool(flags, dtype)
                   : kind == ProblemKind::batchnorm ? build_batchnorm(flags, dtype)
                   : kind == ProblemKind::resize    ? build_resize(flags, dtype)
                                                    : build_bias(flags, dtype);
  return flags.symbolic_batch ? with_symbolic_batch(d) : d;
}

ProblemInput::ProblemInput(CLI::App& command)
    : command_name_(command.get_name()),
      conv_(command.add_subcommand("conv", "a convolution (fwd, bwddata, bwdfilt)")),
      pool_(command.add_subcommand("pool", "a max or average pooling (fwd, bwd)")),
      bias_(command.add_subcommand("bias", "a convolution bias gradient")),
      batchnorm_(command.add_subcommand("batchnorm", "a batch normalisation (fwd, bwd)")),
      resize_(command.add_subcommand("resize", "a nearest or linear resize (fwd, bwd)")) {
  command.add_option("--name", name_, "a descriptor name (or lib<name>.so) instead of flags");
  command.require_subcommand(0, 1);
  // e.g. --json after the flags
  for (CLI::App* sub : {conv_, pool_, bias_, batchnorm_, resize_}) sub->fallthrough();
  add_problem_flags(*conv_, ProblemKind::conv, conv_flags_);
  add_problem_flags(*pool_, ProblemKind::pool, pool_flags_);
  add_problem_flags(*bias_, ProblemKind::bias, bias_flags_);
  add_problem_flags(*batchnorm_, ProblemKind::batchnorm, batchnorm_flags_);
  add_problem_flags(*resize_, ProblemKind::resize, resize_flags_);
}

bool ProblemInput::given() const {
  return !name_.empty() || conv_->parsed() || pool_->parsed() || bias_->parsed() ||
         batchnorm_->parsed() || resize_->parsed();
}

OpDescriptor ProblemInput::descriptor() const {
  if (!name_.empty() && (conv_->parsed() || pool_->parsed() || bias_->parsed() ||
                         batchnorm_->parsed() || resize_->parsed()))
    throw UsageError("give either --name or a conv|pool|bias|batchnorm|resize problem, not both");
  if (!name_.empty()) {
    auto parsed = parse_descriptor_name(name_);
    if (!parsed.is_ok()) throw UsageError(fmt::format("--name: {}", parsed.status().message()));
    return parsed.value();
  }
  if (conv_->parsed()) return build_descriptor(ProblemKind::conv, conv_flags_);
  if (pool_->parsed()) return build_descriptor(ProblemKind::pool, pool_flags_);
  if (bias_->parsed()) return build_descriptor(ProblemKind::bias, bias_flags_);
  if (batchnorm_->parsed()) return build_descriptor(ProblemKind::batchnorm, batchnorm_flags_);
  if (resize_->parsed()) return build_descriptor(ProblemKind::resize, resize_flags_);
  throw UsageError(fmt::format(
      "name an operation: {0} conv|pool|bias|batchnorm|resize <flags>, or {0} --name "
      "<descriptor>",
      command_name_));
}

}  // namespace convjit::cli
