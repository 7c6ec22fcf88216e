#include "dispatcher/backends/onednn/onednn_backend.hpp"

#include <fmt/format.h>

#include <random>

#include "dispatcher/backends/onednn/onednn_batchnorm.hpp"
#include "dispatcher/backends/onednn/onednn_kernel.hpp"
#include "dispatcher/backends/onednn/onednn_primitive_descs.hpp"
#include "dispatcher/descriptor/output_shape.hpp"
#include "dispatcher/tuning/kernel_timing.hpp"
#include "dispatcher/tuning/operand_buffers.hpp"

namespace convjit {

namespace {

std::string library_label() {
  return fmt::format("oneDNN {} ({})", onednn().version(), onednn().cpu_isa());
}

const dnnl_memory_desc_t& query_md(const_dnnl_primitive_desc_t pd, dnnl_query_t what) {
  return *onednn().api().primitive_desc_query_md(pd, what, 0);
}

bool same_md(const dnnl_memory_desc_t& a, const dnnl_memory_desc_t& b) {
  return onednn().api().memory_desc_equal(&a, &b) != 0;
}

// One operand of the main primitive, as the kernel wires it.
struct Wire {
  int arg;                // DNNL_ARG_SRC, ...
  OnednnOperand operand;  // the caller's operand it is
  const OnednnTensor* tensor;
  DataType type;
  dnnl_query_t query;  // the primitive's md for it
};

// The op's operands; the last one is its output.
std::vector<Wire> wires(const OpDescriptor& d, const OnednnProblem& p, DataType result_type) {
  const OnednnOperand out = OnednnOperand::result;
  switch (d.kind) {
    case OpKind::bias_grad:
      return {{DNNL_ARG_SRC, OnednnOperand::dy, &p.y, d.dtype, dnnl_query_src_md},
              {DNNL_ARG_DST, out, &p.w, result_type, dnnl_query_dst_md}};
    case OpKind::pool:
    case OpKind::resize:
      if (d.direction == Direction::fwd)
        return {{DNNL_ARG_SRC, OnednnOperand::x, &p.x, d.dtype, dnnl_query_src_md},
                {DNNL_ARG_DST, out, &p.y, result_type, dnnl_query_dst_md}};
      return {{DNNL_ARG_DIFF_DST, OnednnOperand::dy, &p.y, d.dtype, dnnl_query_diff_dst_md},
              {DNNL_ARG_DIFF_SRC, out, &p.x, result_type, dnnl_query_diff_src_md}};
    case OpKind::conv:
    case OpKind::batchnorm:  // onednn_batchnorm.hpp
      break;
  }
  switch (d.direction) {
    case Direction::bwddata:
      return {{DNNL_ARG_DIFF_DST, OnednnOperand::dy, &p.y, d.dtype, dnnl_query_diff_dst_md},
              {DNNL_ARG_WEIGHTS, OnednnOperand::w, &p.w, d.dtype, dnnl_query_weights_md},
              {DNNL_ARG_DIFF_SRC, out, &p.x, result_type, dnnl_query_diff_src_md}};
    case Direction::bwdfilt:
      return {{DNNL_ARG_SRC, OnednnOperand::x, &p.x, d.dtype, dnnl_query_src_md},
              {DNNL_ARG_DIFF_DST, OnednnOperand::dy, &p.y, d.dtype, dnnl_query_diff_dst_md},
              {DNNL_ARG_DIFF_WEIGHTS, out, &p.w, result_type, dnnl_query_diff_weights_md}};
    default:
      return {{DNNL_ARG_SRC, OnednnOperand::x, &p.x, d.dtype, dnnl_query_src_md},
              {DNNL_ARG_WEIGHTS, OnednnOperand::w, &p.w, d.dtype, dnnl_query_weights_md},
              {DNNL_ARG_DST, out, &p.y, result_type, dnnl_query_dst_md}};
  }
}

// The memory the main primitive reads an input from: the caller's, or a
// copy reordered into the primitive's layout (a step before it).
Result<dnnl_memory_t> wire_input(OnednnKernel& kernel, const Wire& w,
                                 const dnnl_memory_desc_t& wanted, int& reorders) {
  auto given_md = strided_md(*w.tensor, w.type);
  if (!given_md.is_ok()) return given_md.status();
  auto given = kernel.program().operand_memory(w.operand, given_md.value());
  if (!given.is_ok() || same_md(given_md.value(), wanted)) return given;
  auto copy = kernel.program().owned_memory(wanted, "an operand in oneDNN's layout");
  if (!copy.is_ok()) return copy.status();
  const dnnl_memory_t copied = copy.value().memory;
  auto reorder = reorder_pd(given_md.value(), wanted);
  if (!reorder.is_ok()) return reorder.status();
  ++reorders;
  if (Status s = kernel.program().add_step(reorder.value().get(),
                                           {{DNNL_ARG_FROM, given.value()}, {DNNL_ARG_TO, copied}});
      !s.is_ok())
    return s;
  return copied;
}

// The main primitive (`args` and its output), writing the result memory
// directly, or a buffer in its own layout that a step after it reorders
// into the result memory.
Status wire_output(OnednnKernel& kernel, const Wire& out, const_dnnl_primitive_desc_t pd,
                   std::vector<dnnl_exec_arg_t> args, int& reorders) {
  auto result_md = strided_md(*out.tensor, out.type);
  if (!result_md.is_ok()) return result_md.status();
  auto result = kernel.program().operand_memory(OnednnOperand::result, result_md.value());
  if (!result.is_ok()) return result.status();
  const dnnl_memory_desc_t& produced = query_md(pd, out.query);
  if (same_md(produced, result_md.value())) {
    args.push_back({out.arg, result.value()});
    return kernel.program().add_step(pd, std::move(args));
  }
  auto own = kernel.program().owned_memory(produced, "the output in oneDNN's layout");
  if (!own.is_ok()) return own.status();
  args.push_back({out.arg, own.value().memory});
  if (Status s = kernel.program().add_step(pd, std::move(args)); !s.is_ok()) return s;
  auto back = reorder_pd(produced, result_md.value());
  if (!back.is_ok()) return back.status();
  ++reorders;
  return kernel.program().add_step(
      back.value().get(), {{DNNL_ARG_FROM, own.value().memory}, {DNNL_ARG_TO, result.value()}});
}

// Max pooling's backward reads the forward's workspace: the kernel runs the
// forward first, into y and workspace buffers of its own.
Status add_pooling_forward(OnednnKernel& kernel, const OnednnProblem& p, const OpDescriptor& d,
                           const_dnnl_primitive_desc_t forward, dnnl_memory_t& workspace) {
  auto x_md = strided_md(p.x, d.dtype);
  if (!x_md.is_ok()) return x_md.status();
  auto x = kernel.program().operand_memory(OnednnOperand::x, x_md.value());
  auto y = kernel.program().owned_memory(query_md(forward, dnnl_query_dst_md),
                                         "the recomputed pooled y");
  auto ws = kernel.program().owned_memory(query_md(forward, dnnl_query_workspace_md),
                                          "the max-pooling workspace");
  for (const Status& s : {x.status(), y.status(), ws.status()})
    if (!s.is_ok()) return s;
  workspace = ws.value().memory;
  return kernel.program().add_step(forward, {{DNNL_ARG_SRC, x.value()},
                                             {DNNL_ARG_DST, y.value().memory},
                                             {DNNL_ARG_WORKSPACE, workspace}});
}

// The kernel running `pds`: input reorders, the primitive, the output's
// reorder back to the caller's layout.
Result<std::unique_ptr<Kernel>> assemble(const OpDescriptor& d, const OnednnProblem& p,
                                         const OnednnPrimitiveDescs& pds, DataType result_type,
                                         std::string& layout_note) {
  auto stream = onednn_cpu_stream();
  if (!stream.is_ok()) return stream.status();
  auto kernel = std::make_unique<OnednnKernel>(d, std::move(stream).value(), result_type);
  std::vector<dnnl_exec_arg_t> args;
  if (d.is_pool() && d.direction == Direction::bwd && d.pool_mode == PoolingMode::max) {
    dnnl_memory_t workspace = nullptr;
    if (Status s = add_pooling_forward(*kernel, p, d, pds.forward.get(), workspace); !s.is_ok())
      return s;
    args.push_back({DNNL_ARG_WORKSPACE, workspace});
  }
  const std::vector<Wire> all = wires(d, p, result_type);
  int reorders = 0;
  for (std::size_t i = 0; i + 1 < all.size(); ++i) {
    auto memory = wire_input(*kernel, all[i], query_md(pds.pd.get(), all[i].query), reorders);
    if (!memory.is_ok()) return memory.status();
    args.push_back({all[i].arg, memory.value()});
  }
  if (Status s = wire_output(*kernel, all.back(), pds.pd.get(), std::move(args), reorders);
      !s.is_ok())
    return s;
  if (result_type != d.dtype || d.has_epilogue())
    if (Status s = kernel->reserve_result_buffer(); !s.is_ok()) return s;
  layout_note = reorders == 0 ? "the caller's layouts"
                              : fmt::format("oneDNN's layouts, {} reorder{}", reorders,
                                            reorders == 1 ? "" : "s");
  return std::unique_ptr<Kernel>(std::move(kernel));
}

// The types oneDNN may write the result in, best first: f32, so that a
// bf16 or f16 output is rounded once, after alpha, beta and the epilogue.
std::vector<DataType> result_types(DataType type) {
  if (type == DataType::f32) return {DataType::f32};
  return {DataType::f32, type};
}

// A pool backward whose windows overlap, or a resize backward, sums several
// gradients into one dx element.  oneDNN's reference implementation sums
// them in the result's type: in bf16 or f16 that drifts past their
// tolerance, so only an f32 result may serve it.
bool sums_shared_gradients(const OpDescriptor& d, DataType result_type) {
  if (d.direction != Direction::bwd || result_type == DataType::f32) return false;
  if (d.is_resize()) return true;
  if (!d.is_pool()) return false;
  for (int i = 0; i < d.spatial_dims; ++i) {
    const WindowGeometry g{d.x_dims[2 + i], d.window[i], d.pad_begin[i],
                           d.pad_end[i],    d.stride[i], d.dilation[i]};
    if (g.stride < g.extent()) return true;
  }
  return false;
}

std::string op_label(const OpDescriptor& d) {
  if (d.kind == OpKind::bias_grad) return "bias gradient";
  return fmt::format("{} {}",
                     d.is_conv()   ? "conv"
                     : d.is_pool() ? "pool"
                                   : "resize",
                     direction_name(d.direction));
}

Result<std::unique_ptr<Kernel>> build_layout(const OpDescriptor& d, OnednnLayout layout,
                                             BuildTrace& trace) {
  auto problem = onednn_problem(d);
  if (!problem.is_ok()) return problem.status();
  std::string unimplemented;
  for (DataType result_type : result_types(d.dtype)) {
    if (sums_shared_gradients(d, result_type)) {
      unimplemented += fmt::format(
          "{}{} result: overlapping windows' gradients would be summed in {}, past its "
          "tolerance (the reference sums them in f32)",
          unimplemented.empty() ? "" : "; ", dtype_name(result_type), dtype_name(result_type));
      continue;
    }
    auto pds = make_primitive_descs(d, problem.value(), layout, result_type);
    if (!pds.is_ok()) {
      if (pds.status().code() != CONVJIT_STATUS_UNSUPPORTED) return pds.status();
      unimplemented += fmt::format("{}{} result: {}", unimplemented.empty() ? "" : "; ",
                                   dtype_name(result_type), pds.status().message());
      continue;
    }
    std::string layout_note;
    auto kernel = assemble(d, problem.value(), pds.value(), result_type, layout_note);
    if (kernel.is_ok() && d.is_conv())
      trace.variant =
          layout == OnednnLayout::strided ? kOnednnStridedVariant : kOnednnBlockedVariant;
    if (kernel.is_ok())
      trace.probes.push_back(
          {library_label(), fmt::format("{}: {} on {}, {} result", op_label(d),
                                        implementation_name(pds.value().pd.get()), layout_note,
                                        dtype_name(result_type))});
    return kernel;
  }
  return Status::unsupported(fmt::format("{} has no {} {} on this CPU ({}): {}", library_label(),
                                         dtype_name(d.dtype), op_label(d), onednn().cpu_isa(),
                                         unimplemented));
}

Result<std::unique_ptr<Kernel>> batchnorm(const OpDescriptor& d, BuildTrace& trace) {
  auto problem = onednn_problem(d);
  if (!problem.is_ok()) return problem.status();
  std::string implementation;
  auto kernel = build_onednn_batchnorm(d, problem.value(), implementation);
  if (!kernel.is_ok() && kernel.status().code() == CONVJIT_STATUS_UNSUPPORTED)
    return Status::unsupported(fmt::format("{} has no {} batch normalization on this CPU ({}): {}",
                                           library_label(), dtype_name(d.dtype), onednn().cpu_isa(),
                                           kernel.status().message()));
  if (kernel.is_ok())
    trace.probes.push_back(
        {library_label(),
         fmt::format("batchnorm {}: {} in f32", direction_name(d.direction), implementation)});
  return kernel;
}

// The faster of the two layouts, each timed on scratch operands (a warm-up
// call, then the median of kLayoutTimingCalls): which one wins depends on
// the shape (1x1 convolutions favour the caller's layouts, wider filters
// oneDNN's blocks, by up to 5x either way) more than any rule captures.
// One that oneDNN cannot build loses to the other.
constexpr int kLayoutTimingCalls = 3;

Result<std::unique_ptr<Kernel>> faster_layout(const OpDescriptor& d, BuildTrace& trace) {
  auto strided = build_layout(d, OnednnLayout::strided, trace);
  auto blocked = build_layout(d, OnednnLayout::blocked, trace);
  if (!strided.is_ok() || !blocked.is_ok())
    return strided.is_ok() ? std::move(strided) : std::move(blocked);
  std::mt19937 rng(2026);
  const OperandBuffers operands(d, rng);
  auto strided_ms = median_kernel_ms(*strided.value(), operands.args, nullptr, kLayoutTimingCalls);
  auto blocked_ms = median_kernel_ms(*blocked.value(), operands.args, nullptr, kLayoutTimingCalls);
  if (!strided_ms.is_ok()) return strided_ms.status();
  if (!blocked_ms.is_ok()) return blocked_ms.status();
  const bool keep_strided = strided_ms.value() <= blocked_ms.value();
  trace.probes.push_back(
      {library_label(),
       fmt::format("layouts timed at build: strided {:.4f} ms, blocked {:.4f} ms; "
                   "kept {}",
                   strided_ms.value(), blocked_ms.value(), keep_strided ? "strided" : "blocked")});
  trace.variant = keep_strided ? kOnednnStridedVariant : kOnednnBlockedVariant;
  return keep_strided ? std::move(strided) : std::move(blocked);
}

}  // namespace

Status OnednnBackend::check_support(const OpDescriptor& desc,
                                    const convjit_device_t& device) const {
  if (device.kind != CONVJIT_DEVICE_HOST)
    return Status::not_available("oneDNN serves the host device; CUDA devices use cuDNN");
  if (Status s = onednn().available(); !s.is_ok()) return s;
  return onednn_problem(desc).status();
}

Result<std::unique_ptr<Kernel>> OnednnBackend::build(const OpDescriptor& desc,
                                                     const convjit_device_t&, BuildTrace& trace) {
  if (desc.is_conv()) return faster_layout(desc, trace);
  if (desc.is_batchnorm()) return batchnorm(desc, trace);
  return build_layout(desc, OnednnLayout::strided, trace);
}

Result<std::vector<KernelVariant>> OnednnBackend::build_variants(const OpDescriptor& desc,
                                                                 const convjit_device_t& device,
                                                                 BuildTrace& trace) {
  if (!desc.is_conv()) return Backend::build_variants(desc, device, trace);
  return build_each_variant(
      {kOnednnStridedVariant, kOnednnBlockedVariant},
      [&](const std::string& id) { return build_variant(desc, device, id, trace); });
}

std::optional<std::vector<std::string>> OnednnBackend::variant_ids(const OpDescriptor& desc,
                                                                   const convjit_device_t&) const {
  if (!desc.is_conv()) return std::vector<std::string>{""};
  return std::vector<std::string>{kOnednnStridedVariant, kOnednnBlockedVariant};
}

Result<std::unique_ptr<Kernel>> OnednnBackend::build_variant(const OpDescriptor& desc,
                                                             const convjit_device_t& device,
                                                             std::string_view id,
                                                             BuildTrace& trace) {
  if (id.empty()) return build(desc, device, trace);
  if (desc.is_conv() && id == kOnednnStridedVariant)
    return build_layout(desc, OnednnLayout::strided, trace);
  if (desc.is_conv() && id == kOnednnBlockedVariant)
    return build_layout(desc, OnednnLayout::blocked, trace);
  return Status::not_available(
      fmt::format("onednn offers no variant {} for {}", id, op_label(desc)));
}

}  // namespace convjit
