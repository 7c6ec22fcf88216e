// The XLA FFI handlers that run convjit's ops inside jax.jit
// (python/convjit/jax): one for every op on the host, one on CUDA, each a
// thin layer over the C API's plans.  Python names the op by its
// descriptor (checked, and its plan made, at trace time) and says which
// convjit operand each argument and result buffer is; the handler binds
// them and runs the plan.
//
// Plans are cached per thread by device and descriptor name: XLA runs a
// handler on its own threads, so no lock is taken, and an executable
// restored from a persistent compilation cache needs nothing but the name.
// JAX is functional: alpha and beta are 1 and 0, and a running statistic
// that convjit updates in place is an output aliased to its input, which
// XLA fills with the input's values before the call.  On CUDA an op runs on
// XLA's stream for the call, with scratch memory from XLA's allocator, so
// it orders with the ops around it as XLA's own kernels do.
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

// The most XLA's FFI lets a handler ask of its scratch allocator (on the
// H200, 256 was refused), and what the JIT kernels' widest vector access to
// their workspace needs; XLA's device allocator aligns its blocks further.
constexpr std::size_t kWorkspaceAlignment = 16;

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

using PlanMap = std::unordered_map<std::string, std::unique_ptr<convjit_plan_t, PlanDeleter>,
                                   NameHash, std::equal_to<>>;

// A device's plans: the host is ordinal -1 here, CUDA devices their own.
PlanMap& plans_on(const convjit_device_t& device) {
  thread_local std::unordered_map<int, PlanMap> by_device;
  return by_device[device.kind == CONVJIT_DEVICE_HOST ? -1 : device.ordinal];
}

ffi::ErrorOr<convjit_plan_t*> plan_for(const convjit_device_t& device,
                                       std::string_view descriptor) {
  PlanMap& plans = plans_on(device);
  if (auto it = plans.find(descriptor); it != plans.end()) return it->second.get();
  const std::string name(descriptor);
  convjit_plan_t* plan = nullptr;
  if (convjit_plan_create(name.c_str(), &device, nullptr, nullptr, &plan) != CONVJIT_STATUS_SUCCESS)
    return ffi::Unexpected(ffi::Error::InvalidArgument(convjit_last_error_message()));
  plans.emplace(name, plan);
  return plan;
}

// The operands of one call: each buffer bound to the convjit operand its
// role names.
ffi::ErrorOr<convjit_operands_t> bind_buffers(ffi::RemainingArgs args, ffi::RemainingRets rets,
                                              ffi::Span<const std::int64_t> arg_roles,
                                              ffi::Span<const std::int64_t> ret_roles,
                                              double momentum) {
  if (arg_roles.size() != args.size() || ret_roles.size() != rets.size())
    return ffi::Unexpected(
        ffi::Error::InvalidArgument("convjit: the roles do not match the buffers"));
  convjit_operands_t operands;
  (void)convjit_operands_init(&operands);
  operands.norm.momentum = momentum;
  for (std::size_t i = 0; i < args.size(); ++i) {
    auto buffer = args.get<ffi::AnyBuffer>(i);
    if (buffer.has_error()) return ffi::Unexpected(buffer.error());
    if (!bind(operands, arg_roles[i], buffer.value().untyped_data()))
      return ffi::Unexpected(ffi::Error::InvalidArgument("convjit: an argument's role is unknown"));
  }
  for (std::size_t i = 0; i < rets.size(); ++i) {
    auto buffer = rets.get<ffi::AnyBuffer>(i);
    if (buffer.has_error()) return ffi::Unexpected(buffer.error());
    if (!bind(operands, ret_roles[i], buffer.value()->untyped_data()))
      return ffi::Unexpected(ffi::Error::InvalidArgument("convjit: a result's role is unknown"));
  }
  return operands;
}

ffi::Error run_plan(convjit_plan_t* plan, const convjit_operands_t& operands,
                    const convjit_exec_t* exec) {
  if (convjit_plan_run(plan, 0, &operands, 1.0, 0.0, exec) != CONVJIT_STATUS_SUCCESS)
    return ffi::Error::Internal(convjit_last_error_message());
  return ffi::Error::Success();
}

ffi::Error run_on_host(ffi::RemainingArgs args, ffi::RemainingRets rets,
                       std::string_view descriptor, ffi::Span<const std::int64_t> arg_roles,
                       ffi::Span<const std::int64_t> ret_roles, double momentum) {
  auto plan = plan_for({CONVJIT_DEVICE_HOST, 0}, descriptor);
  if (plan.has_error()) return plan.error();
  auto operands = bind_buffers(args, rets, arg_roles, ret_roles, momentum);
  if (operands.has_error()) return operands.error();
  return run_plan(plan.value(), operands.value(), nullptr);
}

// The kernel's scratch comes from XLA (its allocator, freed when the call
// returns, after the work on `stream` that uses it is ordered): a plan left
// to its own would allocate per call.
ffi::Error run_on_cuda(void* stream, std::int32_t ordinal, ffi::ScratchAllocator scratch,
                       ffi::RemainingArgs args, ffi::RemainingRets rets,
                       std::string_view descriptor, ffi::Span<const std::int64_t> arg_roles,
                       ffi::Span<const std::int64_t> ret_roles, double momentum) {
  const convjit_device_t device{CONVJIT_DEVICE_CUDA, ordinal};
  auto plan = plan_for(device, descriptor);
  if (plan.has_error()) return plan.error();
  auto operands = bind_buffers(args, rets, arg_roles, ret_roles, momentum);
  if (operands.has_error()) return operands.error();
  convjit_exec_t exec{device, stream, nullptr, 0, 0};  // XLA's scratch: w copied every call
  if (convjit_plan_workspace_size(plan.value(), 0, &exec.workspace_bytes) != CONVJIT_STATUS_SUCCESS)
    return ffi::Error::Internal(convjit_last_error_message());
  if (exec.workspace_bytes > 0) {
    auto workspace = scratch.Allocate(exec.workspace_bytes, kWorkspaceAlignment);
    if (!workspace.has_value())
      return ffi::Error(ffi::ErrorCode::kResourceExhausted,
                        "convjit: XLA could not allocate the kernel's " +
                            std::to_string(exec.workspace_bytes) + " bytes of scratch memory");
    exec.workspace = *workspace;
  }
  return run_plan(plan.value(), operands.value(), &exec);
}

}  // namespace

// The attributes every call carries (python/convjit/jax/_ffi.py's call).
#define CONVJIT_XLA_OP_BINDING(binding)                 \
  binding.RemainingArgs()                               \
      .RemainingRets()                                  \
      .Attr<std::string_view>("descriptor")             \
      .Attr<ffi::Span<const std::int64_t>>("arg_roles") \
      .Attr<ffi::Span<const std::int64_t>>("ret_roles") \
      .Attr<double>("momentum")

XLA_FFI_DEFINE_HANDLER_SYMBOL(convjit_xla_run, run_on_host,
                              CONVJIT_XLA_OP_BINDING(ffi::Ffi::Bind()));

XLA_FFI_DEFINE_HANDLER_SYMBOL(convjit_xla_run_cuda, run_on_cuda,
                              CONVJIT_XLA_OP_BINDING(ffi::Ffi::Bind()
                                                         .Ctx<ffi::PlatformStream<void*>>()
                                                         .Ctx<ffi::DeviceOrdinal>()
                                                         .Ctx<ffi::ScratchAllocator>()));
