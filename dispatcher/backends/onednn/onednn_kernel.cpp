#include "dispatcher/backends/onednn/onednn_kernel.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "dispatcher/backends/onednn/max_pool_nan_guard.hpp"
#include "dispatcher/backends/onednn/onednn_output_stage.hpp"
#include "dispatcher/backends/reference/reference_backend.hpp"
#include "dispatcher/descriptor/operand_layout.hpp"

namespace convjit {

namespace {

const OnednnLibrary& onednn() { return OnednnLibrary::instance(); }

}  // namespace

OnednnKernel::OnednnKernel(const OpDescriptor& desc, OnednnStream stream, DataType result_type)
    : desc_(desc),
      stream_(std::move(stream)),
      result_type_(result_type),
      // The output's span, in the result's type.
      result_bytes_(output_bytes(desc) / element_size(desc.dtype) * element_size(result_type)),
      guard_nan_(needs_max_pool_nan_guard(desc)) {}

Result<dnnl_memory_t> OnednnKernel::operand_memory(OnednnOperand operand,
                                                   const dnnl_memory_desc_t& md) {
  auto engine = onednn_cpu_engine();
  if (!engine.is_ok()) return engine.status();
  dnnl_memory_t memory = nullptr;
  if (Status s = onednn().check(
          onednn().api().memory_create(&memory, &md, engine.value(), DNNL_MEMORY_NONE),
          "dnnl_memory_create");
      !s.is_ok())
    return s;
  memories_.emplace_back(memory);
  bound_.push_back({operand, memory});
  return memory;
}

Result<dnnl_memory_t> OnednnKernel::owned_memory(const dnnl_memory_desc_t& md, const char* what) {
  auto engine = onednn_cpu_engine();
  if (!engine.is_ok()) return engine.status();
  auto buffer = HostBuffer::allocate(onednn().api().memory_desc_get_size(&md), what);
  if (!buffer.is_ok()) return buffer.status();
  dnnl_memory_t memory = nullptr;
  if (Status s = onednn().check(
          onednn().api().memory_create(&memory, &md, engine.value(), buffer.value().data()),
          "dnnl_memory_create");
      !s.is_ok())
    return s;
  memories_.emplace_back(memory);
  buffers_.push_back(std::move(buffer).value());
  return memory;
}

Status OnednnKernel::add_step(const_dnnl_primitive_desc_t pd, std::vector<dnnl_exec_arg_t> args) {
  const dnnl_memory_desc_t* scratchpad =
      onednn().api().primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  if (scratchpad != nullptr && onednn().api().memory_desc_get_size(scratchpad) > 0) {
    auto memory = owned_memory(*scratchpad, "oneDNN's scratchpad");
    if (!memory.is_ok()) return memory.status();
    args.push_back({DNNL_ARG_SCRATCHPAD, memory.value()});
  }
  dnnl_primitive_t primitive = nullptr;
  if (Status s =
          onednn().check(onednn().api().primitive_create(&primitive, pd), "dnnl_primitive_create");
      !s.is_ok())
    return s;
  steps_.push_back({OnednnPrimitive(primitive), std::move(args)});
  return Status::ok();
}

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

// oneDNN reads inputs through non-const handles; it never writes them.
Status OnednnKernel::bind(const ExecArgs& args, void* result) const {
  for (const Bound& b : bound_) {
    void* handle = nullptr;
    switch (b.operand) {
      case OnednnOperand::x:
        handle = const_cast<void*>(args.x);
        break;
      case OnednnOperand::w:
        handle = const_cast<void*>(args.w);
        break;
      case OnednnOperand::dy:
        handle = const_cast<void*>(args.dy);
        break;
      case OnednnOperand::result:
        handle = result;
        break;
    }
    if (Status s = onednn().check(onednn().api().memory_set_data_handle(b.memory, handle),
                                  "dnnl_memory_set_data_handle");
        !s.is_ok())
      return s;
  }
  return Status::ok();
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
  if (Status s = bind(args, result); !s.is_ok()) return s;
  const OnednnApi& api = onednn().api();
  for (const Step& step : steps_)
    if (Status s = onednn().check(
            api.primitive_execute(step.primitive.get(), stream_.get(),
                                  static_cast<int>(step.args.size()), step.args.data()),
            "dnnl_primitive_execute");
        !s.is_ok())
      return s;
  if (Status s = onednn().check(api.stream_wait(stream_.get()), "dnnl_stream_wait"); !s.is_ok())
    return s;
  if (!direct) apply_output_stage(desc_, result_type_, result, args);
  return Status::ok();
}

}  // namespace convjit
