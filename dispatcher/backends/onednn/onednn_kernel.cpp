#include "dispatcher/backends/onednn/onednn_kernel.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "dispatcher/backends/onednn/max_pool_nan_guard.hpp"
#include "dispatcher/backends/onednn/onednn_output_stage.hpp"
#include "dispatcher/backends/reference/reference_backend.hpp"
#include "dispatcher/descriptor/operand_layout.hpp"

namespace convjit {

OnednnKernel::OnednnKernel(const OpDescriptor& desc, OnednnStream stream, DataType result_type)
    : desc_(desc),
      program_(std::move(stream)),
      result_type_(result_type),
      // The output's span, in the result's type.
      result_bytes_(output_bytes(desc) / element_size(desc.dtype) * element_size(result_type)),
      guard_nan_(needs_max_pool_nan_guard(desc)) {}

Status OnednnKernel::reserve_result_buffer() { return ensure_result_buffer(); }

Status OnednnKernel::ensure_result_buffer() const {
  if (result_buffer_.data() != nullptr || result_bytes_ == 0) return Status::ok();
  auto buffer = HostBuffer::allocate(result_bytes_, "the oneDNN result before its output stage");
  if (!buffer.is_ok()) return buffer.status();
  result_buffer_ = std::move(buffer).value();
  return Status::ok();
}

// oneDNN 2.6's JIT resampling writes a large output with non-temporal
// stores, which fault where the output is not 64-byte aligned (a std::vector's
// or numpy's 16-byte aligned buffer): such a call writes the kernel's own
// aligned buffer, and the output stage copies it out.
constexpr std::uintptr_t kResamplingOutputAlignment = 64;

bool OnednnKernel::writes_output_directly(const ExecArgs& args) const {
  if (desc_.is_resize() &&
      reinterpret_cast<std::uintptr_t>(args.out) % kResamplingOutputAlignment != 0)
    return false;
  return result_type_ == desc_.dtype && !desc_.has_epilogue() && args.alpha == 1.0 &&
         args.beta == 0.0;
}

Status OnednnKernel::execute(const ExecArgs& args) const {
  if (guard_nan_ && input_has_nan(desc_, args.x)) {
    run_reference(desc_, args);
    return Status::ok();
  }
  const std::lock_guard lock(mutex_);
  const bool direct = writes_output_directly(args);
  if (!direct)  // allocates on the first scaled call on an f32 output only
    if (Status s = ensure_result_buffer(); !s.is_ok()) return s;
  void* result = direct ? args.out : result_buffer_.data();
  if (Status s = program_.run(args, result); !s.is_ok()) return s;
  if (!direct) apply_output_stage(desc_, result_type_, result, args);
  return Status::ok();
}

}  // namespace convjit
