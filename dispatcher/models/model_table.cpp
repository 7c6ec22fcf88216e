#include "dispatcher/models/model_table.hpp"

#include <fmt/format.h>

#include "dispatcher/descriptor/descriptor_builder.hpp"

namespace convjit {

namespace {

std::int64_t size_at_level(std::int64_t image, int level) {
  for (int i = 0; i < level && image > 1; ++i) image = (image + 1) / 2;
  return image;
}

Result<convjit_tensor_desc_t> tensor_of(const char* name, const ModelTable& m,
                                        const ModelOptions& o, const std::int64_t* dims,
                                        bool channels_last) {
  convjit_tensor_desc_t t{};
  if (convjit_tensor_desc_init(&t, static_cast<convjit_dtype_t>(o.dtype), m.spatial_dims + 2, dims,
                               channels_last ? CONVJIT_LAYOUT_NHWC : CONVJIT_LAYOUT_NCHW) !=
      CONVJIT_STATUS_SUCCESS)
    return Status::invalid(fmt::format("{}: {}", name, convjit_last_error_message()));
  return t;
}

// An activation: batch, channels and a square (cubic) image.
Result<convjit_tensor_desc_t> tensor(const char* name, const ModelTable& m, const ModelOptions& o,
                                     std::int64_t channels, std::int64_t size) {
  const std::int64_t dims[CONVJIT_MAX_RANK] = {o.batch, channels, size, size, size};
  return tensor_of(name, m, o, dims, o.channels_last);
}

Result<OpDescriptor> conv_op(const ModelTable& m, const ModelOptions& o, const ModelLayer& l,
                             Direction direction, std::int64_t size) {
  convjit_conv_params_t p{};
  if (convjit_conv_params_init(&p, m.spatial_dims) != CONVJIT_STATUS_SUCCESS)
    return Status::invalid(convjit_last_error_message());
  p.groups = l.groups == 0 ? l.in_channels : l.groups;
  for (int i = 0; i < m.spatial_dims; ++i)
    p.stride[i] = l.stride, p.pad_begin[i] = p.pad_end[i] = l.pad;
  const auto x = tensor("x", m, o, l.in_channels, size);
  if (!x.is_ok()) return x.status();
  const std::int64_t w_dims[CONVJIT_MAX_RANK] = {l.out_channels, l.in_channels / p.groups,
                                                 l.kernel, l.kernel, l.kernel};
  const auto w = tensor_of("w", m, o, w_dims, o.krsc_filters);
  if (!w.is_ok()) return w.status();
  auto shape = make_conv_descriptor(&p, Direction::fwd, &x.value(), &w.value(), nullptr);
  if (!shape.is_ok()) return shape.status();
  const auto y = tensor("y", m, o, l.out_channels, shape.value().y_dims[2]);
  if (!y.is_ok()) return y.status();
  return make_conv_descriptor(&p, direction, &x.value(), &w.value(), &y.value());
}

Result<OpDescriptor> pool_op(const ModelTable& m, const ModelOptions& o, const ModelLayer& l,
                             Direction direction, std::int64_t size) {
  convjit_pool_params_t p{};
  const auto mode = static_cast<convjit_pool_mode_t>(static_cast<int>(l.pool_mode) - 1);
  if (convjit_pool_params_init(&p, m.spatial_dims, mode) != CONVJIT_STATUS_SUCCESS)
    return Status::invalid(convjit_last_error_message());
  for (int i = 0; i < m.spatial_dims; ++i) {
    p.window[i] = l.global_pool ? size : l.kernel;
    p.stride[i] = l.global_pool ? 1 : l.stride;
    p.pad_begin[i] = p.pad_end[i] = l.pad;
  }
  const auto x = tensor("x", m, o, l.in_channels, size);
  if (!x.is_ok()) return x.status();
  auto shape = make_pool_descriptor(&p, Direction::fwd, &x.value(), nullptr);
  if (!shape.is_ok()) return shape.status();
  const auto y = tensor("y", m, o, l.in_channels, shape.value().y_dims[2]);
  if (!y.is_ok()) return y.status();
  return make_pool_descriptor(&p, direction, &x.value(), &y.value());
}

// The BatchNorm after a conv, on its output (`y`): training fwd, or bwd with
// every gradient, the block activation fused where the layer has one.
Result<OpDescriptor> batchnorm_op(const ModelTable& m, const ModelLayer& l, Direction direction,
                                  const convjit_tensor_desc_t& y) {
  convjit_batchnorm_params_t p{};
  (void)convjit_batchnorm_params_init(&p);
  p.epsilon = m.batchnorm_epsilon;
  if (l.activation && m.block_activation != Activation::identity)
    p.activation = static_cast<convjit_activation_t>(m.block_activation);
  const std::int32_t flags =
      kNormScale | kNormShift | (direction == Direction::bwd ? kNormGradMask : 0);
  return make_batchnorm_descriptor(&p, direction, flags, &y, &y);
}

// A nearest upsample by the layer's scale; an integer scale maps the same
// with or without it, so the descriptor names none (as PyTorch passes it).
Result<OpDescriptor> upsample_op(const ModelTable& m, const ModelOptions& o, const ModelLayer& l,
                                 Direction direction, std::int64_t size) {
  convjit_resize_params_t p{};
  if (convjit_resize_params_init(&p, m.spatial_dims, CONVJIT_RESIZE_NEAREST) !=
      CONVJIT_STATUS_SUCCESS)
    return Status::invalid(convjit_last_error_message());
  const auto x = tensor("x", m, o, l.in_channels, size);
  const auto y = tensor("y", m, o, l.in_channels, size * l.upsample_scale);
  if (!x.is_ok()) return x.status();
  if (!y.is_ok()) return y.status();
  return make_resize_descriptor(&p, direction, &x.value(), &y.value());
}

Status add_batchnorm(const ModelTable& m, const ModelOptions& o, const ModelLayer& l,
                     const OpDescriptor& conv, std::vector<ModelOp>& ops) {
  std::int64_t values = o.batch;
  for (int i = 0; i < m.spatial_dims; ++i) values *= conv.y_dims[static_cast<std::size_t>(2 + i)];
  if (values == 1) return Status::ok();  // one value per channel: no training BatchNorm there
  const auto y = tensor("y", m, o, l.out_channels, conv.y_dims[2]);
  if (!y.is_ok()) return y.status();
  for (Direction d : {Direction::fwd, Direction::bwd}) {
    auto op = batchnorm_op(m, l, d, y.value());
    if (!op.is_ok()) return op.status();
    ops.push_back({l.name + ".bn", op.value(), l.count});
  }
  return Status::ok();
}

// Conv+BN[+act] with the batch norm folded: the conv, a bias, the activation.
void fuse_block(const ModelTable& m, const ModelLayer& l, OpDescriptor& d) {
  d.epilogue_operands = kEpilogueBias;
  d.activation = l.activation && !l.bias ? m.block_activation : Activation::identity;
}

Status add_layer(const ModelTable& m, const ModelOptions& o, const ModelLayer& l,
                 std::vector<ModelOp>& ops) {
  const std::int64_t size = size_at_level(o.image_size, l.level);
  std::vector<Direction> directions;
  if (!l.is_conv()) {
    directions = {Direction::fwd, Direction::bwd};
  } else {
    directions = {Direction::fwd, Direction::bwdfilt};
    if (!l.input_layer) directions.insert(directions.begin() + 1, Direction::bwddata);
  }
  const std::size_t first = ops.size();
  for (Direction d : directions) {
    auto op = l.is_pool       ? pool_op(m, o, l, d, size)
              : l.is_upsample ? upsample_op(m, o, l, d, size)
                              : conv_op(m, o, l, d, size);
    if (!op.is_ok())
      return Status::invalid(fmt::format("model {} layer {} at image size {}: {}", m.name, l.name,
                                         o.image_size, op.status().message()));
    ops.push_back({l.name, op.value(), l.count});
    if (o.fused && l.is_conv() && d == Direction::fwd) fuse_block(m, l, ops.back().desc);
  }
  if (l.batchnorm && !o.fused)
    if (Status s = add_batchnorm(m, o, l, ops[first].desc, ops); !s.is_ok())
      return Status::invalid(fmt::format("model {} layer {} batchnorm: {}", m.name, l.name,
                                         s.message()));
  if (!l.bias) return Status::ok();
  const auto dy = tensor("dy", m, o, l.out_channels, ops.back().desc.y_dims[2]);
  const auto bias = dy.is_ok() ? make_bias_grad_descriptor(&dy.value())
                               : Result<OpDescriptor>(dy.status());
  if (!bias.is_ok())
    return Status::invalid(fmt::format("model {} layer {} bias: {}", m.name, l.name,
                                       bias.status().message()));
  ops.push_back({l.name, bias.value(), l.count});
  return Status::ok();
}

}  // namespace

const std::vector<ModelTable>& builtin_models() {
  static const std::vector<ModelTable> models = {resnet50_table(), yolo11n_table(),
                                                 cosmoflow_table()};
  return models;
}

const ModelTable* find_model(const std::string& name) {
  for (const ModelTable& m : builtin_models())
    if (m.name == name) return &m;
  return nullptr;
}

Result<std::vector<ModelOp>> expand_model(const ModelTable& model, const ModelOptions& options) {
  ModelOptions o = options;
  if (o.image_size == 0) o.image_size = model.default_image_size;
  if (o.batch < 1) return Status::invalid(fmt::format("batch {} must be at least 1", o.batch));
  if (o.image_size < 1)
    return Status::invalid(fmt::format("image size {} must be at least 1", o.image_size));
  if (o.fused && model.block_activation == Activation::identity)
    return Status::invalid(fmt::format(
        "model {} has no fused form: its table names no block activation for the fused forward "
        "(yolo11n's is SiLU)",
        model.name));
  std::vector<ModelOp> ops;
  for (const ModelLayer& layer : model.layers)
    if (Status s = add_layer(model, o, layer, ops); !s.is_ok()) return s;
  return ops;
}

}  // namespace convjit
