// A descriptor bound to one backend and variant (convjit_plan_create): the
// choice is made once, ahead of time (`convjit export` pins it into the
// libraries it writes), and every call runs exactly that kernel.
//
// A concrete descriptor's kernel is built when the plan is made.  A
// symbolic-batch descriptor takes its batch per call; each batch's kernel is
// built on its first call and published for lock-free lookup after.
//
// Plans come from Dispatcher::without_tuned_libraries(): a plan is what a
// tuned library calls back into, so it must never resolve through one.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "convjit/convjit.h"
#include "dispatcher/dispatcher.hpp"

namespace convjit {

struct PlanChoice {
  std::string backend;  // "" lets the chain choose
  std::string variant;  // "" is the backend's own choice
};

class PinnedPlan {
 public:
  // Fails when the descriptor is invalid, or is concrete and its kernel
  // cannot be built as pinned.  A symbolic plan's kernels are built per batch.
  [[nodiscard]] static Result<std::unique_ptr<PinnedPlan>> create(const OpDescriptor& desc,
                                                                  const convjit_device_t& device,
                                                                  PlanChoice choice);

  [[nodiscard]] const OpDescriptor& descriptor() const { return desc_; }
  [[nodiscard]] const convjit_device_t& device() const { return device_; }

  // The kernel serving `batch` (ignored for a concrete plan, which takes
  // only its own batch), built now if it is the batch's first call.
  [[nodiscard]] Result<const Resolution*> kernel_for(std::int64_t batch);

  // Runs at `batch`; args as ExecArgs takes them.  *backend (may be null)
  // receives the serving backend's static name.
  [[nodiscard]] Status execute(std::int64_t batch, const ExecArgs& args,
                               std::string_view* backend = nullptr);

 private:
  PinnedPlan(const OpDescriptor& desc, const convjit_device_t& device, PlanChoice choice)
      : desc_(desc), device_(device), choice_(std::move(choice)) {}
  [[nodiscard]] Result<std::unique_ptr<Resolution>> build(std::int64_t batch) const;
  [[nodiscard]] const Resolution* published(std::int64_t batch) const;

  struct Slot {
    std::int64_t batch = 0;
    const Resolution* resolution = nullptr;
  };
  static constexpr std::size_t kPublishedBatches = 16;

  OpDescriptor desc_;
  convjit_device_t device_;
  PlanChoice choice_;
  std::array<Slot, kPublishedBatches> slots_{};  // [0, published_) filled, never changed
  std::atomic<std::size_t> published_{0};
  std::mutex build_mutex_;  // guards owned_ and publishing; never held on the hot path
  std::map<std::int64_t, std::unique_ptr<Resolution>> owned_;
};

}  // namespace convjit
