#include "dispatcher/descriptor/descriptor_builder.hpp"

#include <fmt/format.h>

#include <bit>
#include <cmath>

#include "dispatcher/c_api/c_enum.hpp"
#include "dispatcher/descriptor/descriptor_validation.hpp"

namespace convjit {

namespace {

Status check_tensor_desc(const convjit_tensor_desc_t* t, const char* name) {
  if (t == nullptr) return Status::invalid(fmt::format("{} descriptor is NULL", name));
  if (t->rank < 3 || t->rank > kMaxRank)
    return Status::invalid(fmt::format(
        "{} rank = {} must be 3, 4 or 5 (N, C and 1 to 3 spatial dims)", name, t->rank));
  if (const int dtype = raw_c_enum(t->dtype); !is_valid_dtype(dtype))
    return Status::invalid(fmt::format(
        "{} dtype = {} is not a convjit_dtype_t (f32, f16, bf16, f64)", name, dtype));
  return Status::ok();
}

Status check_same_kind(const convjit_tensor_desc_t& a, const char* a_name,
                       const convjit_tensor_desc_t& b, const char* b_name) {
  if (a.rank != b.rank)
    return Status::invalid(
        fmt::format("{} rank = {} differs from {} rank = {}; all tensors of "
                    "one op have the same rank",
                    b_name, b.rank, a_name, a.rank));
  if (a.dtype != b.dtype)
    return Status::invalid(
        fmt::format("{} dtype {} differs from {} dtype {}; all tensors of one op share a dtype",
                    b_name, dtype_name(static_cast<DataType>(b.dtype)), a_name,
                    dtype_name(static_cast<DataType>(a.dtype))));
  return Status::ok();
}

Status check_spatial_dims(int spatial_dims, const convjit_tensor_desc_t& x, const char* x_name) {
  if (spatial_dims != x.rank - 2)
    return Status::invalid(
        fmt::format("params.spatial_dims = {} but {} has rank {} ({} spatial "
                    "dims); make them agree",
                    spatial_dims, x_name, x.rank, x.rank - 2));
  return Status::ok();
}

void copy_tensor(const convjit_tensor_desc_t& t, Dims5& dims, Dims5& strides) {
  for (int i = 0; i < t.rank; ++i) {
    dims[static_cast<std::size_t>(i)] = t.dims[i];
    strides[static_cast<std::size_t>(i)] = t.strides[i];
  }
}

template <class Params>
void copy_spatial(const Params& p, OpDescriptor& d) {
  for (int i = 0; i < d.spatial_dims; ++i) {
    const auto at = static_cast<std::size_t>(i);
    d.pad_begin[at] = p.pad_begin[i];
    d.pad_end[at] = p.pad_end[i];
    d.stride[at] = p.stride[i];
    d.dilation[at] = p.dilation[i];
  }
}

// Fills the y slot from the implied shape when the caller gave none.
void derive_y(OpDescriptor& d, Rounding rounding) {
  d.y_dims = implied_y_dims(d, rounding);
  d.y_strides = contiguous_strides(d.y_dims, d.rank(), /*channels_last=*/false);
}

Status check_y(const convjit_tensor_desc_t* x, const char* x_name, const convjit_tensor_desc_t* y,
               const char* y_name) {
  if (y == nullptr) return Status::ok();
  if (Status s = check_tensor_desc(y, y_name); !s.is_ok()) return s;
  return check_same_kind(*x, x_name, *y, y_name);
}

Status validate_or_derive(OpDescriptor& d, const convjit_tensor_desc_t* y, Rounding rounding) {
  if (y == nullptr) {
    derive_y(d, rounding);
  } else {
    copy_tensor(*y, d.y_dims, d.y_strides);
  }
  return validate_descriptor(d);
}

}  // namespace

Result<OpDescriptor> make_conv_descriptor(const convjit_conv_params_t* params, Direction direction,
                                          const convjit_tensor_desc_t* x,
                                          const convjit_tensor_desc_t* w,
                                          const convjit_tensor_desc_t* y) {
  OpDescriptor d;
  d.kind = OpKind::conv;
  d.direction = direction;
  const SlotNames names = slot_names(d);
  if (params == nullptr) return Status::invalid("conv params are NULL");
  for (Status s : {check_tensor_desc(x, names.x), check_tensor_desc(w, names.w)})
    if (!s.is_ok()) return s;
  for (Status s : {check_same_kind(*x, names.x, *w, names.w), check_y(x, names.x, y, names.y),
                   check_spatial_dims(params->spatial_dims, *x, names.x)})
    if (!s.is_ok()) return s;
  d.dtype = static_cast<DataType>(x->dtype);
  d.spatial_dims = params->spatial_dims;
  d.groups = params->groups;
  copy_tensor(*x, d.x_dims, d.x_strides);
  copy_tensor(*w, d.w_dims, d.w_strides);
  copy_spatial(*params, d);
  if (Status s = validate_or_derive(d, y, Rounding::floor); !s.is_ok()) return s;
  return d;
}

Result<OpDescriptor> make_fused_conv_descriptor(const convjit_conv_params_t* params,
                                                const convjit_tensor_desc_t* x,
                                                const convjit_tensor_desc_t* w,
                                                const convjit_epilogue_t* epilogue,
                                                const convjit_tensor_desc_t* y) {
  if (epilogue != nullptr) {
    if (const int act = raw_c_enum(epilogue->activation);
        act < CONVJIT_ACTIVATION_IDENTITY || act > CONVJIT_ACTIVATION_SIGMOID)
      return Status::invalid(fmt::format(
          "epilogue activation = {} is not a convjit_activation_t (identity 0, relu 1, silu 2, "
          "sigmoid 3)",
          act));
  }
  auto made = make_conv_descriptor(params, Direction::fwd, x, w, y);
  if (!made.is_ok() || epilogue == nullptr) return made;
  OpDescriptor d = made.value();
  d.activation = static_cast<Activation>(epilogue->activation);
  d.epilogue_operands = (epilogue->bias != nullptr ? kEpilogueBias : 0) |
                        (epilogue->residual != nullptr ? kEpilogueResidual : 0);
  if (Status s = validate_descriptor(d); !s.is_ok()) return s;
  return d;
}

Result<OpDescriptor> make_pool_descriptor(const convjit_pool_params_t* params, Direction direction,
                                          const convjit_tensor_desc_t* x,
                                          const convjit_tensor_desc_t* y, bool ceil_mode) {
  OpDescriptor d;
  d.kind = OpKind::pool;
  d.direction = direction;
  const SlotNames names = slot_names(d);
  if (params == nullptr) return Status::invalid("pool params are NULL");
  if (const int mode = raw_c_enum(params->mode);
      mode < CONVJIT_POOL_MAX || mode > CONVJIT_POOL_AVG_INCLUDE_PAD)
    return Status::invalid(fmt::format("pool mode = {} is not a convjit_pool_mode_t", mode));
  // One check at a time: check_y reads *x, so x must have passed first.
  if (Status s = check_tensor_desc(x, names.x); !s.is_ok()) return s;
  if (Status s = check_y(x, names.x, y, names.y); !s.is_ok()) return s;
  if (Status s = check_spatial_dims(params->spatial_dims, *x, names.x); !s.is_ok()) return s;
  d.pool_mode = static_cast<PoolingMode>(static_cast<int>(params->mode) + 1);
  d.dtype = static_cast<DataType>(x->dtype);
  d.spatial_dims = params->spatial_dims;
  copy_tensor(*x, d.x_dims, d.x_strides);
  copy_spatial(*params, d);
  for (int i = 0; i < d.spatial_dims; ++i)
    d.window[static_cast<std::size_t>(i)] = params->window[i];
  const Rounding rounding = ceil_mode ? Rounding::ceil : Rounding::floor;
  if (Status s = validate_or_derive(d, y, rounding); !s.is_ok()) return s;
  return d;
}

Result<OpDescriptor> make_bias_grad_descriptor(const convjit_tensor_desc_t* dy) {
  if (Status s = check_tensor_desc(dy, "dy"); !s.is_ok()) return s;
  OpDescriptor d;
  d.kind = OpKind::bias_grad;
  d.direction = Direction::bwd;
  d.dtype = static_cast<DataType>(dy->dtype);
  d.spatial_dims = dy->rank - 2;
  copy_tensor(*dy, d.y_dims, d.y_strides);
  if (Status s = validate_descriptor(d); !s.is_ok()) return s;
  return d;
}

Status check_batchnorm_values(const convjit_batchnorm_params_t& p) {
  if (!(p.momentum >= 0 && p.momentum <= 1))
    return Status::invalid(
        fmt::format("batchnorm params.momentum = {} must lie in [0, 1]", p.momentum));
  return Status::ok();
}

Result<OpDescriptor> make_batchnorm_descriptor(const convjit_batchnorm_params_t* params,
                                               Direction direction, std::int32_t norm_flags,
                                               const convjit_tensor_desc_t* x,
                                               const convjit_tensor_desc_t* y) {
  const char* y_name = direction == Direction::fwd ? "y" : "dy";
  if (params == nullptr) return Status::invalid("batchnorm params are NULL");
  if (Status s = check_batchnorm_values(*params); !s.is_ok()) return s;
  if (const int act = raw_c_enum(params->activation);
      act != CONVJIT_ACTIVATION_IDENTITY && act != CONVJIT_ACTIVATION_RELU &&
      act != CONVJIT_ACTIVATION_SILU)
    return Status::invalid(fmt::format(
        "batchnorm params.activation = {} must be identity (0), relu (1) or silu (2)", act));
  if (Status s = check_tensor_desc(x, "x"); !s.is_ok()) return s;
  if (y == nullptr) return Status::invalid(fmt::format("{} descriptor is NULL", y_name));
  if (Status s = check_y(x, "x", y, y_name); !s.is_ok()) return s;
  OpDescriptor d;
  d.kind = OpKind::batchnorm;
  d.direction = direction;
  d.dtype = static_cast<DataType>(x->dtype);
  d.spatial_dims = x->rank - 2;
  d.activation = static_cast<Activation>(params->activation);
  d.norm_flags = norm_flags | (params->onnx_running_stats != 0 ? kNormOnnxRunningStats : 0);
  d.norm_epsilon_bits = std::bit_cast<std::int64_t>(params->epsilon);
  copy_tensor(*x, d.x_dims, d.x_strides);
  copy_tensor(*y, d.y_dims, d.y_strides);
  if (Status s = validate_descriptor(d); !s.is_ok()) return s;
  return d;
}

namespace {

Status check_resize_params(const convjit_resize_params_t& p) {
  if (const int mode = raw_c_enum(p.mode); mode < CONVJIT_RESIZE_NEAREST || mode > CONVJIT_RESIZE_LINEAR)
    return Status::invalid(fmt::format("resize params.mode = {} is not a convjit_resize_mode_t", mode));
  if (const int c = raw_c_enum(p.coordinates);
      c < CONVJIT_RESIZE_ASYMMETRIC || c > CONVJIT_RESIZE_TF_HALF_PIXEL_FOR_NN)
    return Status::invalid(
        fmt::format("resize params.coordinates = {} is not a convjit_resize_coordinates_t", c));
  for (int i = 0; i < p.spatial_dims && i < kMaxSpatialDims; ++i)
    if (!(p.scale[i] >= 0) || std::isinf(p.scale[i]))
      return Status::invalid(fmt::format(
          "resize params.scale[{}] = {} must be positive and finite, or 0 to take the output "
          "size from y",
          i, p.scale[i]));
  return Status::ok();
}

// floor(in * scale) per spatial dim, as PyTorch and ONNX size the output.
Status derive_resize_y(OpDescriptor& d) {
  d.y_dims = d.x_dims;
  for (int i = 0; i < d.spatial_dims; ++i) {
    const double scale = d.resize_scale(i);
    if (scale == 0)
      return Status::invalid(fmt::format(
          "resize params.scale[{}] is 0: give every scale to compute the output size, or pass y",
          i));
    const auto at = static_cast<std::size_t>(i + 2);
    const double size = std::floor(static_cast<double>(d.x_dims[at]) * scale);
    d.y_dims[at] = size >= 1 && size < 9.2e18 ? static_cast<std::int64_t>(size) : 0;
  }
  d.y_strides = contiguous_strides(d.y_dims, d.rank(), /*channels_last=*/false);
  return Status::ok();
}

}  // namespace

Result<OpDescriptor> make_resize_descriptor(const convjit_resize_params_t* params,
                                            Direction direction, const convjit_tensor_desc_t* x,
                                            const convjit_tensor_desc_t* y) {
  OpDescriptor d;
  d.kind = OpKind::resize;
  d.direction = direction;
  const SlotNames names = slot_names(d);
  if (params == nullptr) return Status::invalid("resize params are NULL");
  if (Status s = check_resize_params(*params); !s.is_ok()) return s;
  if (Status s = check_tensor_desc(x, names.x); !s.is_ok()) return s;
  if (Status s = check_y(x, names.x, y, names.y); !s.is_ok()) return s;
  if (Status s = check_spatial_dims(params->spatial_dims, *x, names.x); !s.is_ok()) return s;
  d.dtype = static_cast<DataType>(x->dtype);
  d.spatial_dims = params->spatial_dims;
  // The C enum starts at 1 (nearest), as ResizeMode after `none`.
  d.resize_mode = static_cast<ResizeMode>(params->mode);
  d.resize_coordinates = static_cast<ResizeCoordinates>(params->coordinates);
  for (int i = 0; i < d.spatial_dims; ++i)
    d.resize_scale_bits[static_cast<std::size_t>(i)] = std::bit_cast<std::int64_t>(params->scale[i]);
  copy_tensor(*x, d.x_dims, d.x_strides);
  if (y == nullptr) {
    if (Status s = derive_resize_y(d); !s.is_ok()) return s;
  } else {
    copy_tensor(*y, d.y_dims, d.y_strides);
  }
  if (Status s = validate_descriptor(d); !s.is_ok()) return s;
  return d;
}

}  // namespace convjit
