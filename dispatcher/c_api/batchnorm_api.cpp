// The C API of batch normalisation (convjit.h, "batch normalisation").
#include <bit>

#include "convjit/convjit.h"
#include "dispatcher/c_api/api_call.hpp"
#include "dispatcher/c_api/c_enum.hpp"
#include "dispatcher/descriptor/descriptor_builder.hpp"

using namespace convjit;

namespace {

// The descriptor's NormFlag bits for the operands a call passes.
std::int32_t operand_flags(const void* scale, const void* shift) {
  return (scale != nullptr ? kNormScale : 0) | (shift != nullptr ? kNormShift : 0);
}

ApiCallKey& add_params(ApiCallKey& key, const convjit_batchnorm_params_t& p) {
  // Momentum is a run-time value, not part of the key: a new value must not
  // cost a new resolution.  Epsilon is part of the op.
  return key.add(std::int64_t{raw_c_enum(p.activation)})
      .add(std::int64_t{p.onnx_running_stats != 0})
      .add(std::bit_cast<std::int64_t>(p.epsilon));
}

Status run_batchnorm(ApiOp op, const convjit_batchnorm_params_t* params, Direction direction,
                     std::int32_t flags, const convjit_tensor_desc_t* x_desc,
                     const convjit_tensor_desc_t* y_desc, ExecArgs& args,
                     const convjit_exec_t* exec) {
  if (Status s = check_batchnorm_values(*params); !s.is_ok()) return s;
  args.norm.momentum = params->momentum;
  ApiCallKey key;
  key.add(static_cast<std::int64_t>(op)).add(std::int64_t{flags});
  add_params(key, *params).add(*x_desc).add(*y_desc);
  return run_api_call(key, exec, args, [&] {
    return make_batchnorm_descriptor(params, direction, flags, x_desc, y_desc);
  });
}

std::int32_t grad_flags(unsigned grad_mask) {
  return ((grad_mask & CONVJIT_GRAD_INPUT) != 0 ? kNormGradInput : 0) |
         ((grad_mask & CONVJIT_GRAD_WEIGHT) != 0 ? kNormGradScale : 0) |
         ((grad_mask & CONVJIT_GRAD_BIAS) != 0 ? kNormGradShift : 0);
}

Status check_grad_mask(unsigned grad_mask) {
  constexpr unsigned kAll = CONVJIT_GRAD_INPUT | CONVJIT_GRAD_WEIGHT | CONVJIT_GRAD_BIAS;
  if ((grad_mask & ~kAll) != 0 || grad_mask == 0)
    return Status::invalid(fmt::format(
        "grad_mask = {:#x} must select some of CONVJIT_GRAD_INPUT (dx), CONVJIT_GRAD_WEIGHT "
        "(dscale) and CONVJIT_GRAD_BIAS (dshift), and nothing else",
        grad_mask));
  return Status::ok();
}

}  // namespace

extern "C" {

convjit_status_t convjit_batchnorm_params_init(convjit_batchnorm_params_t* params) {
  return guarded([&]() -> Status {
    if (params == nullptr) return Status::invalid("params is NULL");
    *params = convjit_batchnorm_params_t{};
    params->epsilon = 1e-5;
    params->momentum = 0.1;
    params->activation = CONVJIT_ACTIVATION_IDENTITY;
    return Status::ok();
  });
}

convjit_status_t convjit_batchnorm_descriptor_name(
    const convjit_batchnorm_params_t* params, convjit_direction_t direction, unsigned flags,
    unsigned grad_mask, const convjit_tensor_desc_t* x_desc, const convjit_tensor_desc_t* y_desc,
    int symbolic_batch, char* buf, size_t buf_size, size_t* required) {
  return guarded([&]() -> Status {
    const int raw = raw_c_enum(direction);
    if (raw != CONVJIT_FORWARD && raw != CONVJIT_BACKWARD)
      return Status::invalid(fmt::format("direction = {} is not a convjit_direction_t", raw));
    constexpr unsigned kAllFlags =
        CONVJIT_BATCHNORM_NO_SCALE | CONVJIT_BATCHNORM_NO_SHIFT | CONVJIT_BATCHNORM_INFERENCE;
    if ((flags & ~kAllFlags) != 0)
      return Status::invalid(
          fmt::format("flags = {:#x} has bits outside CONVJIT_BATCHNORM_*", flags));
    const bool bwd = raw == CONVJIT_BACKWARD;
    if (bwd) {
      if (Status s = check_grad_mask(grad_mask); !s.is_ok()) return s;
    } else if (grad_mask != 0) {
      return Status::invalid("grad_mask must be 0 for a forward");
    }
    const std::int32_t norm_flags =
        ((flags & CONVJIT_BATCHNORM_NO_SCALE) != 0 ? 0 : kNormScale) |
        ((flags & CONVJIT_BATCHNORM_NO_SHIFT) != 0 ? 0 : kNormShift) |
        ((flags & CONVJIT_BATCHNORM_INFERENCE) != 0 ? kNormInference : 0) | grad_flags(grad_mask);
    return write_name(make_batchnorm_descriptor(params, bwd ? Direction::bwd : Direction::fwd,
                                                norm_flags, x_desc, y_desc),
                      symbolic_batch, buf, buf_size, required);
  });
}

convjit_status_t convjit_batchnorm_forward_training(
    const convjit_batchnorm_params_t* params, const convjit_tensor_desc_t* x_desc, const void* x,
    const void* scale, const void* shift, const convjit_tensor_desc_t* y_desc, void* y,
    void* running_mean, void* running_var, void* saved_mean, void* saved_invstd, double alpha,
    double beta, const convjit_exec_t* exec) {
  return guarded([&]() -> Status {
    if (const char* missing = first_null({{params, "batchnorm params"},
                                          {x_desc, "x descriptor"},
                                          {y_desc, "y descriptor"}}))
      return null_argument(missing);
    if (const char* missing = first_null({{x, "x"}, {y, "y"}}))
      return null_operand(missing, [&] {
        return make_batchnorm_descriptor(params, Direction::fwd, operand_flags(scale, shift),
                                         x_desc, y_desc);
      });
    if ((running_mean == nullptr) != (running_var == nullptr))
      return Status::invalid(
          "running_mean and running_var must both be given (to update them) or both be NULL");
    ExecArgs args = exec_args(exec, alpha, beta);
    args.x = x, args.out = y;
    args.norm.scale = scale, args.norm.shift = shift;
    args.norm.running_mean = running_mean, args.norm.running_var = running_var;
    args.norm.mean = saved_mean, args.norm.invstd = saved_invstd;
    return run_batchnorm(ApiOp::batchnorm_fwd_training, params, Direction::fwd,
                         operand_flags(scale, shift), x_desc, y_desc, args, exec);
  });
}

convjit_status_t convjit_batchnorm_forward_inference(
    const convjit_batchnorm_params_t* params, const convjit_tensor_desc_t* x_desc, const void* x,
    const void* scale, const void* shift, const void* running_mean, const void* running_var,
    const convjit_tensor_desc_t* y_desc, void* y, double alpha, double beta,
    const convjit_exec_t* exec) {
  return guarded([&]() -> Status {
    if (const char* missing = first_null({{params, "batchnorm params"},
                                          {x_desc, "x descriptor"},
                                          {y_desc, "y descriptor"}}))
      return null_argument(missing);
    if (const char* missing = first_null({{x, "x"},
                                          {y, "y"},
                                          {running_mean, "running_mean (inference reads it)"},
                                          {running_var, "running_var (inference reads it)"}}))
      return null_operand(missing, [&] {
        return make_batchnorm_descriptor(params, Direction::fwd,
                                         operand_flags(scale, shift) | kNormInference, x_desc,
                                         y_desc);
      });
    ExecArgs args = exec_args(exec, alpha, beta);
    args.x = x, args.out = y;
    args.norm.scale = scale, args.norm.shift = shift;
    // Read only: the inference kernels never write the running statistics.
    args.norm.running_mean = const_cast<void*>(running_mean);
    args.norm.running_var = const_cast<void*>(running_var);
    return run_batchnorm(ApiOp::batchnorm_fwd_inference, params, Direction::fwd,
                         operand_flags(scale, shift) | kNormInference, x_desc, y_desc, args, exec);
  });
}

convjit_status_t convjit_batchnorm_backward(
    const convjit_batchnorm_params_t* params, int training, const convjit_tensor_desc_t* x_desc,
    const void* x, const convjit_tensor_desc_t* dy_desc, const void* dy, const void* scale,
    const void* shift, const void* mean, const void* var_or_invstd, unsigned grad_mask, void* dx,
    void* dscale, void* dshift, double alpha, double beta, const convjit_exec_t* exec) {
  return guarded([&]() -> Status {
    if (Status s = check_grad_mask(grad_mask); !s.is_ok()) return s;
    const char* stats = training ? "the saved mean and invstd" : "the running mean and variance";
    if (const char* missing = first_null({{params, "batchnorm params"},
                                          {x_desc, "x descriptor"},
                                          {dy_desc, "dy descriptor"}}))
      return null_argument(missing);
    const std::int32_t flags =
        operand_flags(scale, shift) | (training ? 0 : kNormInference) | grad_flags(grad_mask);
    if (const char* missing = first_null({{x, "x"}, {dy, "dy"}}))
      return null_operand(missing, [&] {
        return make_batchnorm_descriptor(params, Direction::bwd, flags, x_desc, dy_desc);
      });
    if (mean == nullptr || var_or_invstd == nullptr)
      return Status::invalid(fmt::format("mean or var_or_invstd is NULL; pass {}", stats));
    for (auto [bit, out, name] : {std::tuple{CONVJIT_GRAD_INPUT, dx, "dx"},
                                  std::tuple{CONVJIT_GRAD_WEIGHT, dscale, "dscale"},
                                  std::tuple{CONVJIT_GRAD_BIAS, dshift, "dshift"}})
      if ((grad_mask & bit) != 0 && out == nullptr)
        return Status::invalid(fmt::format("{} is NULL but grad_mask selects it", name));
    ExecArgs args = exec_args(exec, alpha, beta);
    args.x = x, args.dy = dy, args.out = dx;
    args.norm.scale = scale, args.norm.shift = shift;
    // Read only: a backward writes dx and the parameter gradients alone.
    void* a = const_cast<void*>(mean);
    void* b = const_cast<void*>(var_or_invstd);
    if (training) {
      args.norm.mean = a, args.norm.invstd = b;
    } else {
      args.norm.running_mean = a, args.norm.running_var = b;
    }
    args.norm.scale_grad = dscale, args.norm.shift_grad = dshift;
    return run_batchnorm(ApiOp::batchnorm_bwd, params, Direction::bwd, flags, x_desc, dy_desc,
                         args, exec);
  });
}

}  // extern "C"
