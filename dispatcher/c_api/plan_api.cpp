// The C API of plans (convjit.h, "plans"): a descriptor name bound to one
// backend and variant, run by slot (convolutions) or on any op's operands.
#include <fmt/format.h>

#include <memory>
#include <string>

#include "convjit/convjit.h"
#include "dispatcher/c_api/api_guard.hpp"
#include "dispatcher/c_api/plan_operands.hpp"
#include "dispatcher/cuda/cuda_driver.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/plan/pinned_plan.hpp"

struct convjit_plan {
  std::unique_ptr<convjit::PinnedPlan> plan;
};

using namespace convjit;

namespace {

std::string text_or_empty(const char* text) { return text ? std::string(text) : std::string(); }

Result<convjit_device_t> plan_device(const convjit_device_t* device) {
  if (device == nullptr) return Status::invalid("device is NULL; pass {CONVJIT_DEVICE_HOST, 0}");
  if (device->kind != CONVJIT_DEVICE_CUDA || device->ordinal != -1) return *device;
  auto current = CudaDriver::instance().current_device();
  if (!current.is_ok()) return current.status();
  return convjit_device_t{CONVJIT_DEVICE_CUDA, current.value()};
}

Status create(const char* name, const convjit_device_t* device, const char* backend,
              const char* variant, convjit_plan_t** plan) {
  if (plan == nullptr)
    return Status::invalid("plan is NULL; pass the address of a convjit_plan_t*");
  *plan = nullptr;
  if (name == nullptr) return Status::invalid("descriptor_name is NULL");
  auto desc = parse_descriptor_name(name);
  if (!desc.is_ok()) return desc.status();
  auto where = plan_device(device);
  if (!where.is_ok()) return where.status();
  auto made = PinnedPlan::create(desc.value(), where.value(),
                                 {text_or_empty(backend), text_or_empty(variant)});
  if (!made.is_ok()) return made.status();
  *plan = new convjit_plan{std::move(made).value()};
  return Status::ok();
}

// The slots as ExecArgs takes them: the output slot is `out`.
ExecArgs slot_args(Direction direction, void* x, void* w, void* y, double alpha, double beta,
                   const convjit_exec_t* exec) {
  ExecArgs args = exec_args(exec, alpha, beta);
  switch (direction) {
    case Direction::bwddata:
      args.w = w, args.dy = y, args.out = x;
      break;
    case Direction::bwdfilt:
      args.x = x, args.dy = y, args.out = w;
      break;
    default:
      args.x = x, args.w = w, args.out = y;
  }
  return args;
}

Status check_exec(const PinnedPlan& plan, const convjit_exec_t* exec) {
  const convjit_device_t device = device_of(exec);
  if (device.kind == plan.device().kind &&
      (device.kind == CONVJIT_DEVICE_HOST || device.ordinal == -1 ||
       device.ordinal == plan.device().ordinal))
    return Status::ok();
  return Status::invalid(fmt::format(
      "exec's device ({}:{}) is not the plan's ({}:{}); a plan runs where it was made",
      device.kind == CONVJIT_DEVICE_HOST ? "host" : "cuda", device.ordinal,
      plan.device().kind == CONVJIT_DEVICE_HOST ? "host" : "cuda", plan.device().ordinal));
}

}  // namespace

extern "C" {

convjit_status_t convjit_plan_create(const char* descriptor_name, const convjit_device_t* device,
                                     const char* backend, const char* variant,
                                     convjit_plan_t** plan) {
  return guarded([&] { return create(descriptor_name, device, backend, variant, plan); });
}

void convjit_plan_destroy(convjit_plan_t* plan) { delete plan; }

convjit_status_t convjit_plan_workspace_size(convjit_plan_t* plan, int64_t batch, size_t* bytes) {
  return guarded([&]() -> Status {
    if (plan == nullptr || bytes == nullptr)
      return Status::invalid(plan == nullptr ? "plan is NULL" : "bytes is NULL");
    auto kernel = plan->plan->kernel_for(batch);
    if (!kernel.is_ok()) return kernel.status();
    *bytes = kernel.value()->kernel->workspace_bytes();
    return Status::ok();
  });
}

convjit_status_t convjit_plan_execute(convjit_plan_t* plan, int64_t batch, void* x_slot,
                                      void* w_slot, void* y_slot, double alpha, double beta,
                                      const convjit_exec_t* exec) {
  return guarded([&]() -> Status {
    if (plan == nullptr) return Status::invalid("plan is NULL");
    for (auto [pointer, name] :
         {std::pair{x_slot, "x_slot"}, {w_slot, "w_slot"}, {y_slot, "y_slot"}})
      if (pointer == nullptr) return Status::invalid(fmt::format("{} is NULL", name));
    if (Status s = check_exec(*plan->plan, exec); !s.is_ok()) return s;
    const PinnedPlan& p = *plan->plan;
    if (!p.descriptor().is_conv())
      return Status::invalid(fmt::format(
          "the plan's op is a {}: convjit_plan_execute runs convolutions by slot; run it "
          "through convjit_plan_run",
          op_kind_name(p.descriptor().kind)));
    std::string_view backend;
    Status status = plan->plan->execute(
        batch, slot_args(p.descriptor().direction, x_slot, w_slot, y_slot, alpha, beta, exec),
        &backend);
    if (status.is_ok()) set_last_backend(backend);
    return status;
  });
}

convjit_status_t convjit_operands_init(convjit_operands_t* operands) {
  return guarded([&]() -> Status {
    if (operands == nullptr) return Status::invalid("operands is NULL");
    *operands = convjit_operands_t{};
    operands->norm.momentum = 0.1;
    return Status::ok();
  });
}

convjit_status_t convjit_plan_run(convjit_plan_t* plan, int64_t batch,
                                  const convjit_operands_t* operands, double alpha, double beta,
                                  const convjit_exec_t* exec) {
  return guarded([&]() -> Status {
    if (plan == nullptr || operands == nullptr)
      return Status::invalid(plan == nullptr ? "plan is NULL" : "operands is NULL");
    if (Status s = check_exec(*plan->plan, exec); !s.is_ok()) return s;
    ExecArgs args = exec_args(exec, alpha, beta);
    if (Status s = bind_plan_operands(plan->plan->descriptor(), *operands, args); !s.is_ok())
      return s;
    std::string_view backend;
    Status status = plan->plan->execute(batch, args, &backend);
    if (status.is_ok()) set_last_backend(backend);
    return status;
  });
}

convjit_status_t convjit_plan_backend(convjit_plan_t* plan, int64_t batch, char* buf,
                                      size_t buf_size, size_t* required) {
  return guarded([&]() -> Status {
    if (plan == nullptr) return Status::invalid("plan is NULL");
    auto kernel = plan->plan->kernel_for(batch);
    if (!kernel.is_ok()) return kernel.status();
    const Resolution& r = *kernel.value();
    return write_text(variant_label(r.backend, r.variant), "backend buffer", buf, buf_size,
                      required);
  });
}

}  // extern "C"
