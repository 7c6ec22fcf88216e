#include "dispatcher/descriptor/descriptor_json.hpp"

#include "dispatcher/descriptor/descriptor_flags.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"

namespace convjit {

namespace {

template <std::size_t N>
nlohmann::json list(const std::array<std::int64_t, N>& values, int count) {
  return nlohmann::json(std::vector<std::int64_t>(values.begin(), values.begin() + count));
}

void add_batchnorm_fields(nlohmann::json& j, const OpDescriptor& d) {
  j["training"] = !d.has_norm_flag(kNormInference);
  j["epsilon"] = d.norm_epsilon();
  j["scale"] = d.has_norm_flag(kNormScale);
  j["shift"] = d.has_norm_flag(kNormShift);
  if (d.direction == Direction::fwd && !d.has_norm_flag(kNormInference))
    j["running_stats"] = d.has_norm_flag(kNormOnnxRunningStats) ? "onnx" : "pytorch";
  if (d.direction == Direction::bwd) {
    nlohmann::json grads = nlohmann::json::array();
    for (auto [flag, name] : {std::pair{kNormGradInput, "dx"}, std::pair{kNormGradScale, "dscale"},
                              std::pair{kNormGradShift, "dshift"}})
      if (d.has_norm_flag(flag)) grads.push_back(name);
    j["grads"] = grads;
  }
  j["activation"] = activation_name(d.activation);
}

void add_resize_fields(nlohmann::json& j, const OpDescriptor& d) {
  j["mode"] = resize_mode_name(d.resize_mode);
  j["coordinates"] = resize_coordinates_name(d.resize_coordinates);
  nlohmann::json scales = nlohmann::json::array();
  for (int i = 0; i < d.spatial_dims; ++i) scales.push_back(d.resize_scale(i));
  j["scales"] = scales;  // 0: derived from the shapes
}

}  // namespace

nlohmann::json descriptor_json(const OpDescriptor& d) {
  const int rank = d.rank(), spatial = d.spatial_dims;
  nlohmann::json j;
  j["name"] = descriptor_name(d);
  j["symbolic"] = descriptor_name(with_symbolic_batch(d));
  j["op"] = op_kind_name(d.kind);
  j["direction"] = direction_name(d.direction);
  if (d.is_pool()) j["mode"] = pool_mode_name(d.pool_mode);
  j["dtype"] = dtype_name(d.dtype);
  j["spatial_dims"] = spatial;
  if (d.kind != OpKind::bias_grad)
    j["x"] = list(d.x_dims, rank), j["x_strides"] = list(d.x_strides, rank);
  if (d.is_conv())
    j["w"] = list(d.w_dims, rank), j["w_strides"] = list(d.w_strides, rank), j["groups"] = d.groups;
  if (d.is_pool()) j["window"] = list(d.window, spatial);
  j["y"] = list(d.y_dims, rank);
  j["y_strides"] = list(d.y_strides, rank);
  if (d.is_batchnorm()) add_batchnorm_fields(j, d);
  if (d.is_resize()) add_resize_fields(j, d);
  if (d.has_window()) {
    j["pad_begin"] = list(d.pad_begin, spatial);
    j["pad_end"] = list(d.pad_end, spatial);
    j["stride"] = list(d.stride, spatial);
    j["dilation"] = list(d.dilation, spatial);
  }
  j["problem"] = descriptor_flags(d);
  return j;
}

}  // namespace convjit
