// The XLA FFI handler that runs convjit's ops inside jax.jit on the host
// (python/convjit/jax): one handler for every op, a thin layer over the C
// API's plans.  Python names the op by its descriptor (checked, and its
// plan made, at trace time) and says which convjit operand each argument
// and result buffer is; the handler binds them and runs the plan.
//
// Plans are cached per thread by descriptor name: XLA runs a handler on its
// own threads, so no lock is taken, and an executable restored from a
// persistent compilation cache needs nothing but the name.  JAX is
// functional: alpha and beta are 1 and 0, and a running statistic that
// convjit updates in place is an output aliased to its input, which XLA
// fills with the input's values before the call.
#include <xla/ffi/api/ffi.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>

#include "convjit/convjit.h"

namespace ffi = xla::ffi;

namespace {

// Which convjit operand a buffer is (python/convjit/jax/_ffi.py keeps the
// same numbers).
enum Role : std::int64_t {
  kX,
  kW,
  kDy,
  kOut,
  kBias,
  kResidual,
  kScale,
  kShift,
  kRunningMean,
  kRunningVar,
  kSavedMean,
  kSavedInvstd,
  kScaleGrad,
  kShiftGrad,
};

bool bind(convjit_operands_t& o, std::int64_t role, void* data) {
  convjit_norm_operands_t& n = o.norm;
  switch (role) {
    case kX:
      o.x = data;
      return true;
    case kW:
      o.w = data;
      return true;
    case kDy:
      o.dy = data;
      return true;
    case kOut:
      o.out = data;
      return true;
    case kBias:
      o.bias = data;
      return true;
    case kResidual:
      o.residual = data;
      return true;
    case kScale:
      n.scale = data;
      return true;
    case kShift:
      n.shift = data;
      return true;
    case kRunningMean:
      n.running_mean = data;
      return true;
    case kRunningVar:
      n.running_var = data;
      return true;
    case kSavedMean:
      n.saved_mean = data;
      return true;
    case kSavedInvstd:
      n.saved_invstd = data;
      return true;
    case kScaleGrad:
      n.scale_grad = data;
      return true;
    case kShiftGrad:
      n.shift_grad = data;
      return true;
    default:
      return false;
  }
}

struct PlanDeleter {
  void operator()(convjit_plan_t* plan) const { convjit_plan_destroy(plan); }
};

// Heterogeneous lookup: a call's descriptor is a string_view into its frame.
struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view name) const {
    return std::hash<std::string_view>{}(name);
  }
};

ffi::ErrorOr<convjit_plan_t*> plan_for(std::string_view descriptor) {
  thread_local std::unordered_map<std::string, std::unique_ptr<convjit_plan_t, PlanDeleter>,
                                  NameHash, std::equal_to<>>
      plans;
  if (auto it = plans.find(descriptor); it != plans.end()) return it->second.get();
  const std::string name(descriptor);
  const convjit_device_t host{CONVJIT_DEVICE_HOST, 0};
  convjit_plan_t* plan = nullptr;
  if (convjit_plan_create(name.c_str(), &host, nullptr, nullptr, &plan) != CONVJIT_STATUS_SUCCESS)
    return ffi::Unexpected(ffi::Error::InvalidArgument(convjit_last_error_message()));
  plans.emplace(name, plan);
  return plan;
}

ffi::Error run(ffi::RemainingArgs args, ffi::RemainingRets rets, std::string_view descriptor,
               ffi::Span<const std::int64_t> arg_roles, ffi::Span<const std::int64_t> ret_roles,
               double momentum) {
  if (arg_roles.size() != args.size() || ret_roles.size() != rets.size())
    return ffi::Error::InvalidArgument("convjit: the roles do not match the buffers");
  auto plan = plan_for(descriptor);
  if (plan.has_error()) return plan.error();
  convjit_operands_t operands;
  (void)convjit_operands_init(&operands);
  operands.norm.momentum = momentum;
  for (std::size_t i = 0; i < args.size(); ++i) {
    auto buffer = args.get<ffi::AnyBuffer>(i);
    if (buffer.has_error()) return buffer.error();
    if (!bind(operands, arg_roles[i], buffer.value().untyped_data()))
      return ffi::Error::InvalidArgument("convjit: an argument's role is unknown");
  }
  for (std::size_t i = 0; i < rets.size(); ++i) {
    auto buffer = rets.get<ffi::AnyBuffer>(i);
    if (buffer.has_error()) return buffer.error();
    if (!bind(operands, ret_roles[i], buffer.value()->untyped_data()))
      return ffi::Error::InvalidArgument("convjit: a result's role is unknown");
  }
  if (convjit_plan_run(plan.value(), 0, &operands, 1.0, 0.0, nullptr) != CONVJIT_STATUS_SUCCESS)
    return ffi::Error::Internal(convjit_last_error_message());
  return ffi::Error::Success();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(convjit_xla_run, run,
                              ffi::Ffi::Bind()
                                  .RemainingArgs()
                                  .RemainingRets()
                                  .Attr<std::string_view>("descriptor")
                                  .Attr<ffi::Span<const std::int64_t>>("arg_roles")
                                  .Attr<ffi::Span<const std::int64_t>>("ret_roles")
                                  .Attr<double>("momentum"));
