// The building blocks of descriptor validation (descriptor_validation.hpp),
// shared by the per-op checks: a first-failure collector and the checks
// every tensor operand gets.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <span>
#include <string>

#include "convjit/status.hpp"
#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit::validation {

[[nodiscard]] inline std::span<const std::int64_t> used(const Dims5& dims, int rank) {
  return {dims.data(), static_cast<std::size_t>(rank)};
}

// "conv2d fwd", "max pool2d bwd", "batchnorm2d fwd": how messages name the op.
[[nodiscard]] std::string op_label(const OpDescriptor& d);

// Collects the first failure; later checks are skipped once one fails so
// the message always describes the root cause.  Messages are formatted only
// on failure: validation runs on every API call and must not allocate.
// A skipped check's arguments are still evaluated, so arithmetic that is
// safe only once earlier checks passed comes after a `failed()` return.
class Checker {
 public:
  explicit Checker(const OpDescriptor& d) : desc_(d) {}

  template <class... Args>
  void require(bool condition, fmt::format_string<Args...> format, Args&&... args) {
    if (condition || !status_.is_ok()) return;
    status_ =
        Status::invalid(op_label(desc_) + ": " + fmt::format(format, std::forward<Args>(args)...));
  }
  [[nodiscard]] bool failed() const { return !status_.is_ok(); }
  [[nodiscard]] Status take() { return std::move(status_); }

 private:
  const OpDescriptor& desc_;
  Status status_;
};


// name and part together name the field, e.g. ("x", " shape") or ("pad", "").
void check_unused_slots_zero(Checker& c, const char* name, const char* part,
                             std::span<const std::int64_t> all, int used_count);

// has_batch: dims[0] is a batch (x, y), which a symbolic descriptor leaves 0.
void check_tensor(Checker& c, const OpDescriptor& d, const char* name, const Dims5& dims,
                  const Dims5& strides, bool has_batch = true);

// The tensor's extent in bytes fits in int64.
void check_overflow(Checker& c, const OpDescriptor& d, const char* name, const Dims5& dims,
                    const Dims5& strides);

// A written tensor must map distinct indices to distinct elements.
[[nodiscard]] bool is_non_overlapping(const Dims5& dims, const Dims5& strides, int rank);

// That a written tensor's elements do not overlap.
void check_not_overlapping(Checker& c, const OpDescriptor& d, const char* name, const Dims5& dims,
                           const Dims5& strides);

// check_tensor and check_overflow for an operand; with `written`, also that
// its elements do not overlap.
void check_operand(Checker& c, const OpDescriptor& d, const char* name, const Dims5& dims,
                   const Dims5& strides, bool written);

// The per-op checks after the common structure (descriptor_validation.cpp).
void check_batchnorm(Checker& c, const OpDescriptor& d);
void check_resize(Checker& c, const OpDescriptor& d);

}  // namespace convjit::validation
