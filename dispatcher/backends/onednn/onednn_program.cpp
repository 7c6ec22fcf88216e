#include "dispatcher/backends/onednn/onednn_program.hpp"

namespace convjit {

namespace {

// oneDNN reads inputs through non-const handles; it never writes them.
void* handle_of(OnednnOperand operand, const ExecArgs& args, void* result) {
  switch (operand) {
    case OnednnOperand::x:
      return const_cast<void*>(args.x);
    case OnednnOperand::w:
      return const_cast<void*>(args.w);
    case OnednnOperand::dy:
      return const_cast<void*>(args.dy);
    case OnednnOperand::result:
      return result;
    case OnednnOperand::scale:
      return const_cast<void*>(args.norm.scale);
    case OnednnOperand::shift:
      return const_cast<void*>(args.norm.shift);
    case OnednnOperand::mean:
      return args.norm.mean;
    case OnednnOperand::running_mean:
      return args.norm.running_mean;
    case OnednnOperand::running_var:
      return args.norm.running_var;
  }
  return nullptr;
}

}  // namespace

Result<dnnl_memory_t> OnednnProgram::borrowed_memory(const dnnl_memory_desc_t& md, void* data) {
  auto engine = onednn_cpu_engine();
  if (!engine.is_ok()) return engine.status();
  dnnl_memory_t memory = nullptr;
  if (Status s = onednn().check(onednn().api().memory_create(&memory, &md, engine.value(), data),
                                "dnnl_memory_create");
      !s.is_ok())
    return s;
  memories_.emplace_back(memory);
  return memory;
}

Result<dnnl_memory_t> OnednnProgram::operand_memory(OnednnOperand operand,
                                                    const dnnl_memory_desc_t& md) {
  auto memory = borrowed_memory(md, DNNL_MEMORY_NONE);
  if (memory.is_ok()) bound_.push_back({operand, memory.value()});
  return memory;
}

Result<OnednnOwned> OnednnProgram::owned_memory(const dnnl_memory_desc_t& md, const char* what) {
  auto buffer = HostBuffer::allocate(onednn().api().memory_desc_get_size(&md), what);
  if (!buffer.is_ok()) return buffer.status();
  auto memory = borrowed_memory(md, buffer.value().data());
  if (!memory.is_ok()) return memory.status();
  const OnednnOwned owned{memory.value(), buffer.value().data()};
  buffers_.push_back(std::move(buffer).value());
  return owned;
}

Status OnednnProgram::add_step(const_dnnl_primitive_desc_t pd, std::vector<dnnl_exec_arg_t> args) {
  const dnnl_memory_desc_t* scratchpad =
      onednn().api().primitive_desc_query_md(pd, dnnl_query_scratchpad_md, 0);
  if (scratchpad != nullptr && onednn().api().memory_desc_get_size(scratchpad) > 0) {
    auto memory = owned_memory(*scratchpad, "oneDNN's scratchpad");
    if (!memory.is_ok()) return memory.status();
    args.push_back({DNNL_ARG_SCRATCHPAD, memory.value().memory});
  }
  dnnl_primitive_t primitive = nullptr;
  if (Status s =
          onednn().check(onednn().api().primitive_create(&primitive, pd), "dnnl_primitive_create");
      !s.is_ok())
    return s;
  steps_.push_back({OnednnPrimitive(primitive), std::move(args)});
  return Status::ok();
}

Status OnednnProgram::bind(const ExecArgs& args, void* result) const {
  for (const Bound& b : bound_)
    if (Status s = onednn().check(
            onednn().api().memory_set_data_handle(b.memory, handle_of(b.operand, args, result)),
            "dnnl_memory_set_data_handle");
        !s.is_ok())
      return s;
  return Status::ok();
}

Status OnednnProgram::run(const ExecArgs& args, void* result) const {
  if (Status s = bind(args, result); !s.is_ok()) return s;
  const OnednnApi& api = onednn().api();
  for (const Step& step : steps_)
    if (Status s = onednn().check(
            api.primitive_execute(step.primitive.get(), stream_.get(),
                                  static_cast<int>(step.args.size()), step.args.data()),
            "dnnl_primitive_execute");
        !s.is_ok())
      return s;
  return onednn().check(api.stream_wait(stream_.get()), "dnnl_stream_wait");
}

}  // namespace convjit
