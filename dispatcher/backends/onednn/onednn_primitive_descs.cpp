#include "dispatcher/backends/onednn/onednn_primitive_descs.hpp"

#include <fmt/format.h>

namespace convjit {

namespace {

Result<dnnl_memory_desc_t> any_md(const OnednnTensor& t, DataType type) {
  dnnl_memory_desc_t md{};
  if (Status s = onednn().check(
          onednn().api().memory_desc_init_by_tag(&md, t.ndims, t.dims.data(),
                                                 onednn_data_type(type), dnnl_format_tag_any),
          "dnnl_memory_desc_init_by_tag");
      !s.is_ok())
    return s;
  return md;
}

Result<dnnl_memory_desc_t> layout_md(const OnednnTensor& t, DataType type, OnednnLayout layout) {
  return layout == OnednnLayout::strided ? strided_md(t, type) : any_md(t, type);
}

// Every convjit primitive's attributes: the kernel owns the scratchpad, so
// oneDNN allocates nothing when it runs.
Result<OnednnAttr> user_scratchpad() {
  dnnl_primitive_attr_t attr = nullptr;
  if (Status s = onednn().check(onednn().api().attr_create(&attr), "dnnl_primitive_attr_create");
      !s.is_ok())
    return s;
  OnednnAttr owned(attr);
  if (Status s =
          onednn().check(onednn().api().attr_set_scratchpad_mode(attr, dnnl_scratchpad_mode_user),
                         "dnnl_primitive_attr_set_scratchpad_mode");
      !s.is_ok())
    return s;
  return owned;
}

Result<OnednnPrimitiveDesc> create_pd(const_dnnl_op_desc_t op, const_dnnl_primitive_desc_t hint,
                                      const char* what) {
  auto engine = onednn_cpu_engine();
  if (!engine.is_ok()) return engine.status();
  auto attr = user_scratchpad();
  if (!attr.is_ok()) return attr.status();
  dnnl_primitive_desc_t pd = nullptr;
  if (Status s = onednn().check(
          onednn().api().primitive_desc_create(&pd, op, attr.value().get(), engine.value(), hint),
          what);
      !s.is_ok())
    return s;
  return OnednnPrimitiveDesc(pd);
}

struct ConvolutionMds {
  dnnl_memory_desc_t x, w, y;
};

// The mds of a direction's operands: its output in `result_type`, its
// inputs in the descriptor's type.  `hint`: all in the descriptor's type,
// for the forward descriptor a backward one is made from.
Result<ConvolutionMds> convolution_mds(const OpDescriptor& d, const OnednnProblem& p,
                                       OnednnLayout layout, DataType result_type, bool hint) {
  const auto type_of = [&](Direction output_of) {
    return !hint && d.direction == output_of ? result_type : d.dtype;
  };
  auto x = layout_md(p.x, type_of(Direction::bwddata), layout);
  auto w = layout_md(p.w, type_of(Direction::bwdfilt), layout);
  auto y = layout_md(p.y, type_of(Direction::fwd), layout);
  for (const Status& s : {x.status(), w.status(), y.status()})
    if (!s.is_ok()) return s;
  return ConvolutionMds{x.value(), w.value(), y.value()};
}

Result<OnednnPrimitiveDesc> convolution_forward_pd(const OnednnProblem& p,
                                                   const ConvolutionMds& m) {
  dnnl_convolution_desc_t op{};
  if (Status s = onednn().check(
          onednn().api().conv_forward_desc(&op, dnnl_forward_training, dnnl_convolution_direct,
                                           &m.x, &m.w, nullptr, &m.y, p.stride.data(),
                                           p.dilation.data(), p.pad_begin.data(), p.pad_end.data()),
          "dnnl_dilated_convolution_forward_desc_init");
      !s.is_ok())
    return s;
  return create_pd(&op, nullptr, "dnnl_primitive_desc_create(convolution forward)");
}

Result<OnednnPrimitiveDescs> convolution_pds(const OpDescriptor& d, const OnednnProblem& p,
                                             OnednnLayout layout, DataType result_type) {
  auto mds = convolution_mds(d, p, layout, result_type, /*hint=*/false);
  if (!mds.is_ok()) return mds.status();
  if (d.direction == Direction::fwd) {
    auto pd = convolution_forward_pd(p, mds.value());
    if (!pd.is_ok()) return pd.status();
    return OnednnPrimitiveDescs{std::move(pd).value(), {}};
  }
  auto hint_mds = convolution_mds(d, p, layout, result_type, /*hint=*/true);
  if (!hint_mds.is_ok()) return hint_mds.status();
  auto forward = convolution_forward_pd(p, hint_mds.value());
  if (!forward.is_ok()) return forward.status();
  const ConvolutionMds& m = mds.value();
  dnnl_convolution_desc_t op{};
  const dnnl_status_t made =
      d.direction == Direction::bwddata
          ? onednn().api().conv_backward_data_desc(&op, dnnl_convolution_direct, &m.x, &m.w, &m.y,
                                                   p.stride.data(), p.dilation.data(),
                                                   p.pad_begin.data(), p.pad_end.data())
          : onednn().api().conv_backward_weights_desc(
                &op, dnnl_convolution_direct, &m.x, &m.w, nullptr, &m.y, p.stride.data(),
                p.dilation.data(), p.pad_begin.data(), p.pad_end.data());
  if (Status s = onednn().check(made, "dnnl_dilated_convolution_backward_desc_init"); !s.is_ok())
    return s;
  auto pd = create_pd(&op, forward.value().get(),
                      d.direction == Direction::bwddata
                          ? "dnnl_primitive_desc_create(convolution backward data)"
                          : "dnnl_primitive_desc_create(convolution backward weights)");
  if (!pd.is_ok()) return pd.status();
  return OnednnPrimitiveDescs{std::move(pd).value(), std::move(forward).value()};
}

dnnl_alg_kind_t pooling_algorithm(PoolingMode mode) {
  switch (mode) {
    case PoolingMode::avg_include_pad:
      return dnnl_pooling_avg_include_padding;
    case PoolingMode::avg_exclude_pad:
      return dnnl_pooling_avg_exclude_padding;
    default:
      return dnnl_pooling_max;
  }
}

Result<OnednnPrimitiveDesc> pooling_forward_pd(const OpDescriptor& d, const OnednnProblem& p,
                                               dnnl_prop_kind_t prop, const dnnl_memory_desc_t& x,
                                               const dnnl_memory_desc_t& y) {
  dnnl_pooling_v2_desc_t op{};
  if (Status s = onednn().check(
          onednn().api().pooling_forward_desc(&op, prop, pooling_algorithm(d.pool_mode), &x, &y,
                                              p.stride.data(), p.window.data(), p.dilation.data(),
                                              p.pad_begin.data(), p.pad_end.data()),
          "dnnl_pooling_v2_forward_desc_init");
      !s.is_ok())
    return s;
  return create_pd(&op, nullptr, "dnnl_primitive_desc_create(pooling forward)");
}

// An op run on the caller's layouts (pooling, resampling: their kernels
// take plain layouts as they are, and a reorder would cost as much as the
// op): its forward's pd, or its backward's with the forward as the hint.
// forward_pd(prop, x, y) and backward_pd(dx, dy, hint) make the pds.
template <class ForwardPd, class BackwardPd>
Result<OnednnPrimitiveDescs> plain_layout_pds(const OpDescriptor& d, const OnednnProblem& p,
                                              DataType result_type, ForwardPd&& forward_pd,
                                              BackwardPd&& backward_pd) {
  auto x = strided_md(p.x, d.dtype);
  auto y = strided_md(p.y, d.direction == Direction::fwd ? result_type : d.dtype);
  for (const Status& s : {x.status(), y.status()})
    if (!s.is_ok()) return s;
  if (d.direction == Direction::fwd) {
    auto pd = forward_pd(dnnl_forward_inference, x.value(), y.value());
    if (!pd.is_ok()) return pd.status();
    return OnednnPrimitiveDescs{std::move(pd).value(), {}};
  }
  auto dx = strided_md(p.x, result_type);
  if (!dx.is_ok()) return dx.status();
  auto forward = forward_pd(dnnl_forward_training, x.value(), y.value());
  if (!forward.is_ok()) return forward.status();
  auto pd = backward_pd(dx.value(), y.value(), forward.value().get());
  if (!pd.is_ok()) return pd.status();
  return OnednnPrimitiveDescs{std::move(pd).value(), std::move(forward).value()};
}

Result<OnednnPrimitiveDescs> pooling_pds(const OpDescriptor& d, const OnednnProblem& p,
                                         DataType result_type) {
  return plain_layout_pds(
      d, p, result_type,
      [&](dnnl_prop_kind_t prop, const dnnl_memory_desc_t& x, const dnnl_memory_desc_t& y) {
        return pooling_forward_pd(d, p, prop, x, y);
      },
      [&](const dnnl_memory_desc_t& dx, const dnnl_memory_desc_t& dy,
          const_dnnl_primitive_desc_t hint) -> Result<OnednnPrimitiveDesc> {
        dnnl_pooling_v2_desc_t op{};
        if (Status s = onednn().check(
                onednn().api().pooling_backward_desc(
                    &op, pooling_algorithm(d.pool_mode), &dx, &dy, p.stride.data(), p.window.data(),
                    p.dilation.data(), p.pad_begin.data(), p.pad_end.data()),
                "dnnl_pooling_v2_backward_desc_init");
            !s.is_ok())
          return s;
        return create_pd(&op, hint, "dnnl_primitive_desc_create(pooling backward)");
      });
}

dnnl_alg_kind_t resampling_algorithm(const OnednnProblem& p) {
  return p.linear ? dnnl_resampling_linear : dnnl_resampling_nearest;
}

Result<OnednnPrimitiveDescs> resampling_pds(const OpDescriptor& d, const OnednnProblem& p,
                                            DataType result_type) {
  return plain_layout_pds(
      d, p, result_type,
      [&](dnnl_prop_kind_t prop, const dnnl_memory_desc_t& x,
          const dnnl_memory_desc_t& y) -> Result<OnednnPrimitiveDesc> {
        dnnl_resampling_desc_t op{};
        if (Status s =
                onednn().check(onednn().api().resampling_forward_desc(
                                   &op, prop, resampling_algorithm(p), p.factors.data(), &x, &y),
                               "dnnl_resampling_forward_desc_init");
            !s.is_ok())
          return s;
        return create_pd(&op, nullptr, "dnnl_primitive_desc_create(resampling forward)");
      },
      [&](const dnnl_memory_desc_t& dx, const dnnl_memory_desc_t& dy,
          const_dnnl_primitive_desc_t hint) -> Result<OnednnPrimitiveDesc> {
        dnnl_resampling_desc_t op{};
        if (Status s = onednn().check(onednn().api().resampling_backward_desc(
                                          &op, resampling_algorithm(p), p.factors.data(), &dx, &dy),
                                      "dnnl_resampling_backward_desc_init");
            !s.is_ok())
          return s;
        return create_pd(&op, hint, "dnnl_primitive_desc_create(resampling backward)");
      });
}

Result<OnednnPrimitiveDescs> bias_pds(const OpDescriptor& d, const OnednnProblem& p,
                                      DataType result_type) {
  auto dy = strided_md(p.y, d.dtype);
  auto db = strided_md(p.w, result_type);
  for (const Status& s : {dy.status(), db.status()})
    if (!s.is_ok()) return s;
  dnnl_reduction_desc_t op{};
  if (Status s = onednn().check(onednn().api().reduction_desc(&op, dnnl_reduction_sum, &dy.value(),
                                                              &db.value(), 0.0f, 0.0f),
                                "dnnl_reduction_desc_init");
      !s.is_ok())
    return s;
  auto pd = create_pd(&op, nullptr, "dnnl_primitive_desc_create(reduction)");
  if (!pd.is_ok()) return pd.status();
  return OnednnPrimitiveDescs{std::move(pd).value(), {}};
}

}  // namespace

dnnl_data_type_t onednn_data_type(DataType type) {
  switch (type) {
    case DataType::f32:
      return dnnl_f32;
    case DataType::f16:
      return dnnl_f16;
    case DataType::bf16:
      return dnnl_bf16;
    case DataType::f64:
      break;  // declined by onednn_problem
  }
  return dnnl_data_type_undef;
}

Result<dnnl_memory_desc_t> strided_md(const OnednnTensor& t, DataType type) {
  dnnl_memory_desc_t md{};
  if (Status s =
          onednn().check(onednn().api().memory_desc_init_by_strides(
                             &md, t.ndims, t.dims.data(), onednn_data_type(type), t.strides.data()),
                         "dnnl_memory_desc_init_by_strides");
      !s.is_ok())
    return s;
  return md;
}

Result<OnednnPrimitiveDescs> make_primitive_descs(const OpDescriptor& desc,
                                                  const OnednnProblem& problem, OnednnLayout layout,
                                                  DataType result_type) {
  switch (desc.kind) {
    case OpKind::conv:
      return convolution_pds(desc, problem, layout, result_type);
    case OpKind::pool:
      return pooling_pds(desc, problem, result_type);
    case OpKind::bias_grad:
      return bias_pds(desc, problem, result_type);
    case OpKind::resize:
      return resampling_pds(desc, problem, result_type);
    case OpKind::batchnorm:
      break;  // onednn_problem declines it
  }
  return Status::invalid("unknown op kind");
}

Result<OnednnPrimitiveDesc> batchnorm_forward_pd(const dnnl_memory_desc_t& data, float epsilon,
                                                 dnnl_prop_kind_t prop, unsigned flags) {
  dnnl_batch_normalization_desc_t op{};
  if (Status s = onednn().check(
          onednn().api().batch_normalization_forward_desc(&op, prop, &data, epsilon, flags),
          "dnnl_batch_normalization_forward_desc_init");
      !s.is_ok())
    return s;
  return create_pd(&op, nullptr, "dnnl_primitive_desc_create(batch normalization forward)");
}

Result<OnednnPrimitiveDesc> batchnorm_backward_pd(const dnnl_memory_desc_t& data, float epsilon,
                                                  unsigned flags) {
  auto hint = batchnorm_forward_pd(data, epsilon, dnnl_forward_training, flags);
  if (!hint.is_ok()) return hint.status();
  // oneDNN 2.6 implements no dnnl_backward_data with a scale or shift:
  // their gradients are computed whenever they are used.
  const bool parameter_grads = (flags & (dnnl_use_scale | dnnl_use_shift)) != 0;
  dnnl_batch_normalization_desc_t op{};
  if (Status s = onednn().check(onednn().api().batch_normalization_backward_desc(
                                    &op, parameter_grads ? dnnl_backward : dnnl_backward_data,
                                    &data, &data, epsilon, flags),
                                "dnnl_batch_normalization_backward_desc_init");
      !s.is_ok())
    return s;
  return create_pd(&op, hint.value().get(),
                   "dnnl_primitive_desc_create(batch normalization backward)");
}

namespace {

Result<OnednnPrimitiveDesc> eltwise_pd(const dnnl_memory_desc_t& data, dnnl_prop_kind_t prop,
                                       dnnl_alg_kind_t algorithm, float alpha) {
  dnnl_eltwise_desc_t op{};
  if (Status s = onednn().check(
          onednn().api().eltwise_forward_desc(&op, prop, algorithm, &data, alpha, 0.0f),
          "dnnl_eltwise_forward_desc_init");
      !s.is_ok())
    return s;
  return create_pd(&op, nullptr, "dnnl_primitive_desc_create(eltwise forward)");
}

}  // namespace

Result<OnednnPrimitiveDesc> eltwise_forward_pd(const dnnl_memory_desc_t& data,
                                               dnnl_alg_kind_t algorithm, float alpha) {
  return eltwise_pd(data, dnnl_forward_inference, algorithm, alpha);
}

Result<OnednnPrimitiveDesc> eltwise_backward_pd(const dnnl_memory_desc_t& data,
                                                dnnl_alg_kind_t algorithm, float alpha) {
  auto hint = eltwise_pd(data, dnnl_forward_training, algorithm, alpha);
  if (!hint.is_ok()) return hint.status();
  dnnl_eltwise_desc_t op{};
  if (Status s = onednn().check(
          onednn().api().eltwise_backward_desc(&op, algorithm, &data, &data, alpha, 0.0f),
          "dnnl_eltwise_backward_desc_init");
      !s.is_ok())
    return s;
  return create_pd(&op, hint.value().get(), "dnnl_primitive_desc_create(eltwise backward)");
}

Result<OnednnPrimitiveDesc> reorder_pd(const dnnl_memory_desc_t& from,
                                       const dnnl_memory_desc_t& to) {
  auto engine = onednn_cpu_engine();
  if (!engine.is_ok()) return engine.status();
  auto attr = user_scratchpad();
  if (!attr.is_ok()) return attr.status();
  dnnl_primitive_desc_t pd = nullptr;
  if (Status s =
          onednn().check(onednn().api().reorder_primitive_desc_create(
                             &pd, &from, engine.value(), &to, engine.value(), attr.value().get()),
                         "dnnl_reorder_primitive_desc_create");
      !s.is_ok())
    return s;
  return OnednnPrimitiveDesc(pd);
}

std::string implementation_name(const_dnnl_primitive_desc_t pd) {
  const char* name = nullptr;
  if (onednn().api().primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) != dnnl_success ||
      name == nullptr)
    return "unknown";
  return name;
}

}  // namespace convjit
