#include "dispatcher/backends/emulator/kernel_emulator.hpp"

#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <new>

#include "dispatcher/backends/emulator/block_scheduler.hpp"
#include "dispatcher/backends/emulator/launch_context.hpp"
#include "dispatcher/backends/emulator/problem_binding.hpp"
#include "dispatcher/backends/emulator/violation_log.hpp"

namespace convjit::emulator {

namespace {

struct GridCall {
  ErasedKernel kernel;
  const void* in0;
  const void* in1;
  void* out;
  float alpha, beta;
  void* workspace;
  const void* bias;
  const void* residual;
};

void run_thread(const void* context) {
  const auto* c = static_cast<const GridCall*>(context);
  c->kernel(c->in0, c->in1, c->out, c->alpha, c->beta, c->workspace, c->bias, c->residual);
}

// Blocks run in parallel on the host's cores, each on one host thread.
Status run_grid(const GridCall& call, unsigned blocks, unsigned threads) {
  std::atomic<bool> out_of_memory{false};
#pragma omp parallel for schedule(dynamic, 1)
  for (long long b = 0; b < static_cast<long long>(blocks); ++b) {
    try {
      BlockScheduler::for_this_thread().run_block(static_cast<unsigned>(b), blocks, threads,
                                                  &run_thread, &call);
    } catch (const std::bad_alloc&) {
      out_of_memory = true;
    }
  }
  if (out_of_memory)
    return Status(CONVJIT_STATUS_OUT_OF_MEMORY, "the emulator could not map its fiber stacks");
  return Status::ok();
}

// Clears the launch context however emulate() returns.
struct LaunchScope {
  explicit LaunchScope(EmulatedBuffers& buffers, ViolationLog& violations) {
    launch_context() = {"", &buffers, &violations};
  }
  ~LaunchScope() { launch_context() = {}; }
  LaunchScope(const LaunchScope&) = delete;
  LaunchScope& operator=(const LaunchScope&) = delete;
};

void* add_operand(EmulatedBuffers& buffers, const EmulatedOperand& operand) {
  return operand.data == nullptr ? nullptr : buffers.add(*operand.spec, operand.data);
}

}  // namespace

Status emulate(const EmulatedLaunch& launch) {
  static std::mutex one_launch_at_a_time;
  std::lock_guard lock(one_launch_at_a_time);
  const KernelSource& source = *launch.source;
  if (Status s = bind_problem(source.constants); !s.is_ok()) return s;
  EmulatedBuffers buffers;
  ViolationLog violations;
  GridCall call{nullptr,
                add_operand(buffers, launch.in0),
                add_operand(buffers, launch.in1),
                buffers.add(*launch.out.spec, launch.out.data),
                launch.alpha,
                launch.beta,
                nullptr,
                add_operand(buffers, launch.bias),
                add_operand(buffers, launch.residual)};
  // In units of the storage element, the workspace's smallest use.
  const std::size_t unit = element_size(launch.kernels->dtype);
  if (source.workspace_bytes > 0)
    call.workspace = buffers.add(
        {"workspace", BufferRole::scratch, unit,
         static_cast<std::int64_t>((source.workspace_bytes + unit - 1) / unit), {}},
        nullptr);
  LaunchScope scope(buffers, violations);
  for (const KernelEntry& entry : source.entries) {
    call.kernel = launch.kernels->entry(entry.name);
    if (call.kernel == nullptr)
      return Status(CONVJIT_STATUS_INTERNAL_ERROR, fmt::format("the emulated {} has no entry {}",
                                                               source.template_name, entry.name));
    launch_context().kernel_label = fmt::format("{} ({}) {}", source.template_name,
                                                dtype_name(launch.kernels->dtype), entry.name);
    buffers.begin_kernel();
    if (Status s = run_grid(call, entry.blocks(), kJitThreadsPerBlock); !s.is_ok()) return s;
  }
  buffers.report_unwritten_outputs();
  if (violations.count() > 0)
    return Status(CONVJIT_STATUS_EXECUTION_FAILED, "emulator: " + violations.summary());
  buffers.copy_out(launch.out.spec->name, launch.out_destination);
  return Status::ok();
}

}  // namespace convjit::emulator
