// The C API of resize (convjit.h, "resize").
#include <bit>

#include "convjit/convjit.h"
#include "dispatcher/c_api/api_call.hpp"
#include "dispatcher/c_api/c_enum.hpp"
#include "dispatcher/descriptor/descriptor_builder.hpp"

using namespace convjit;

namespace {

// The params field by field: the struct has padding after its enums.
ApiCallKey& add_params(ApiCallKey& key, const convjit_resize_params_t& p) {
  key.add(std::int64_t{p.spatial_dims})
      .add(std::int64_t{raw_c_enum(p.mode)})
      .add(std::int64_t{raw_c_enum(p.coordinates)});
  for (double scale : p.scale) key.add(std::bit_cast<std::int64_t>(scale));
  return key;
}

Status run_resize(ApiOp op, const convjit_resize_params_t* params, Direction direction,
                  const convjit_tensor_desc_t* x_desc, const convjit_tensor_desc_t* y_desc,
                  const ExecArgs& args, const convjit_exec_t* exec) {
  ApiCallKey key;
  key.add(static_cast<std::int64_t>(op));
  add_params(key, *params).add(*x_desc).add(*y_desc);
  return run_api_call(key, exec, args,
                      [&] { return make_resize_descriptor(params, direction, x_desc, y_desc); });
}

}  // namespace

extern "C" {

convjit_status_t convjit_resize_params_init(convjit_resize_params_t* params, int spatial_dims,
                                            convjit_resize_mode_t mode) {
  return guarded([&]() -> Status {
    if (params == nullptr) return Status::invalid("params is NULL");
    if (spatial_dims < 1 || spatial_dims > kMaxSpatialDims)
      return Status::invalid(fmt::format("spatial_dims = {} must be 1, 2 or 3", spatial_dims));
    if (const int raw = raw_c_enum(mode); raw < CONVJIT_RESIZE_NEAREST || raw > CONVJIT_RESIZE_LINEAR)
      return Status::invalid(fmt::format(
          "mode = {} is not a convjit_resize_mode_t (CONVJIT_RESIZE_NEAREST ... LINEAR)", raw));
    *params = convjit_resize_params_t{};
    params->spatial_dims = spatial_dims;
    params->mode = mode;
    params->coordinates =
        mode == CONVJIT_RESIZE_LINEAR ? CONVJIT_RESIZE_HALF_PIXEL : CONVJIT_RESIZE_ASYMMETRIC;
    return Status::ok();
  });
}

convjit_status_t convjit_resize_output_dims(const convjit_resize_params_t* params,
                                            const convjit_tensor_desc_t* x_desc,
                                            int64_t* y_dims) {
  return guarded([&] {
    return write_dims(make_resize_descriptor(params, Direction::fwd, x_desc, nullptr), y_dims);
  });
}

convjit_status_t convjit_resize_descriptor_name(const convjit_resize_params_t* params,
                                                convjit_direction_t direction,
                                                const convjit_tensor_desc_t* x_desc,
                                                const convjit_tensor_desc_t* y_desc,
                                                int symbolic_batch, char* buf, size_t buf_size,
                                                size_t* required) {
  return guarded([&]() -> Status {
    const int raw = raw_c_enum(direction);
    if (raw != CONVJIT_FORWARD && raw != CONVJIT_BACKWARD)
      return Status::invalid(fmt::format("direction = {} is not a convjit_direction_t", raw));
    const Direction dir = raw == CONVJIT_FORWARD ? Direction::fwd : Direction::bwd;
    return write_name(make_resize_descriptor(params, dir, x_desc, y_desc), symbolic_batch, buf,
                      buf_size, required);
  });
}

convjit_status_t convjit_resize_forward(const convjit_resize_params_t* params,
                                        const convjit_tensor_desc_t* x_desc, const void* x,
                                        const convjit_tensor_desc_t* y_desc, void* y, double alpha,
                                        double beta, const convjit_exec_t* exec) {
  return guarded([&]() -> Status {
    if (const char* missing = first_null(
            {{params, "resize params"}, {x_desc, "x descriptor"}, {y_desc, "y descriptor"}}))
      return null_argument(missing);
    if (const char* missing = first_null({{x, "x"}, {y, "y"}}))
      return null_operand(missing, [&] {
        return make_resize_descriptor(params, Direction::fwd, x_desc, y_desc);
      });
    ExecArgs args = exec_args(exec, alpha, beta);
    args.x = x, args.out = y;
    return run_resize(ApiOp::resize_fwd, params, Direction::fwd, x_desc, y_desc, args, exec);
  });
}

convjit_status_t convjit_resize_backward(const convjit_resize_params_t* params,
                                         const convjit_tensor_desc_t* dy_desc, const void* dy,
                                         const convjit_tensor_desc_t* dx_desc, void* dx,
                                         double alpha, double beta, const convjit_exec_t* exec) {
  return guarded([&]() -> Status {
    if (const char* missing = first_null(
            {{params, "resize params"}, {dx_desc, "dx descriptor"}, {dy_desc, "dy descriptor"}}))
      return null_argument(missing);
    if (const char* missing = first_null({{dy, "dy"}, {dx, "dx"}}))
      return null_operand(missing, [&] {
        return make_resize_descriptor(params, Direction::bwd, dx_desc, dy_desc);
      });
    ExecArgs args = exec_args(exec, alpha, beta);
    args.dy = dy, args.out = dx;
    return run_resize(ApiOp::resize_bwd, params, Direction::bwd, dx_desc, dy_desc, args, exec);
  });
}

}  // extern "C"
