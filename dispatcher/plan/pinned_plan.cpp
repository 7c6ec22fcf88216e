#include "dispatcher/plan/pinned_plan.hpp"

#include <fmt/format.h>

#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/descriptor_validation.hpp"

namespace convjit {

Result<std::unique_ptr<PinnedPlan>> PinnedPlan::create(const OpDescriptor& desc,
                                                       const convjit_device_t& device,
                                                       PlanChoice choice) {
  if (choice.backend == "tuned-library")
    return Status::invalid(
        "a plan cannot be pinned to tuned-library: the libraries it finds may call back into "
        "convjit through a plan (convjit export); pin the backend they would use");
  if (choice.backend.empty() && !choice.variant.empty())
    return Status::invalid(fmt::format("variant '{}' needs a backend", choice.variant));
  std::unique_ptr<PinnedPlan> plan(new PinnedPlan(desc, device, std::move(choice)));
  if (desc.symbolic_batch) return plan;
  auto kernel = plan->kernel_for(desc.x_dims[0]);
  if (!kernel.is_ok()) return kernel.status();
  return plan;
}

Result<std::unique_ptr<Resolution>> PinnedPlan::build(std::int64_t batch) const {
  const OpDescriptor concrete = desc_.symbolic_batch ? with_batch(desc_, batch) : desc_;
  if (desc_.symbolic_batch)
    if (Status s = validate_descriptor(concrete); !s.is_ok())
      return Status::invalid(fmt::format("batch {}: {}", batch, s.message()));
  Dispatcher& dispatcher = Dispatcher::without_tuned_libraries();
  if (!choice_.backend.empty()) {
    auto pinned = dispatcher.build_pinned(concrete, device_, choice_.backend, choice_.variant);
    if (!pinned.is_ok()) return pinned.status();
    return std::make_unique<Resolution>(std::move(pinned).value());
  }
  auto chosen = dispatcher.choose(concrete, device_);
  if (!chosen.is_ok()) return chosen.status();
  return std::make_unique<Resolution>(std::move(chosen).value());
}

const Resolution* PinnedPlan::published(std::int64_t batch) const {
  const std::size_t count = published_.load(std::memory_order_acquire);
  for (std::size_t i = 0; i < count; ++i)
    if (slots_[i].batch == batch) return slots_[i].resolution;
  return nullptr;
}

Result<const Resolution*> PinnedPlan::kernel_for(std::int64_t batch) {
  if (!desc_.symbolic_batch) batch = desc_.x_dims[0];
  if (const Resolution* hit = published(batch)) return hit;
  std::lock_guard lock(build_mutex_);
  if (const Resolution* hit = published(batch)) return hit;
  if (auto it = owned_.find(batch); it != owned_.end()) return it->second.get();
  auto built = build(batch);
  if (!built.is_ok()) return built.status();
  const Resolution* resolution = owned_.emplace(batch, std::move(built).value()).first->second.get();
  if (const std::size_t count = published_.load(std::memory_order_relaxed);
      count < kPublishedBatches) {
    slots_[count] = {batch, resolution};
    published_.store(count + 1, std::memory_order_release);
  }
  return resolution;
}

Status PinnedPlan::execute(std::int64_t batch, const ExecArgs& args, std::string_view* backend) {
  if (desc_.symbolic_batch && batch <= 0)
    return Status::invalid(fmt::format("batch {} must be positive", batch));
  if (!desc_.symbolic_batch && batch != 0 && batch != desc_.x_dims[0])
    return Status::invalid(fmt::format("batch {} differs from the plan's concrete batch {}; pass "
                                       "0 or {}",
                                       batch, desc_.x_dims[0], desc_.x_dims[0]));
  auto kernel = kernel_for(batch);
  if (!kernel.is_ok()) return kernel.status();
  if (backend) *backend = kernel.value()->backend;
  return kernel.value()->kernel->execute(args);
}

}  // namespace convjit
