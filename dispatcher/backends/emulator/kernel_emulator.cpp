#include "dispatcher/backends/emulator/kernel_emulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <new>
#include <utility>

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
  const NormOperands* norm;
  const EmulatedTensorMaps* maps;
};

void run_thread(const void* context) {
  const auto* c = static_cast<const GridCall*>(context);
  c->kernel(c->in0, c->in1, c->out, c->alpha, c->beta, c->workspace, c->bias, c->residual,
            c->norm, c->maps);
}

// The GPU refuses a grid that is not whole clusters; the emulator numbers
// a cluster's threads across it by warps, so its blocks must be whole ones.
Status check_whole_clusters(const KernelEntry& entry) {
  if (entry.cluster_blocks < 1 || entry.blocks() % entry.cluster_blocks != 0)
    return Status::invalid(
        fmt::format("{} launches {} blocks in clusters of {}: the grid must be whole clusters",
                    entry.name, entry.blocks(), entry.cluster_blocks));
  if (entry.cluster_blocks > 1 && entry.threads_per_block % kWarpSize != 0)
    return Status::unsupported(fmt::format(
        "{} launches clusters of blocks of {} threads: the emulator runs clusters of whole warps "
        "only",
        entry.name, entry.threads_per_block));
  return Status::ok();
}

// Blocks run in parallel on the host's cores, each cluster on one host
// thread.
Status run_grid(const GridCall& call, const KernelEntry& entry) {
  if (Status s = check_whole_clusters(entry); !s.is_ok()) return s;
  const unsigned blocks = entry.blocks(), cluster = entry.cluster_blocks;
  std::atomic<bool> out_of_memory{false};
#pragma omp parallel for schedule(dynamic, 1)
  for (long long c = 0; c < static_cast<long long>(blocks / cluster); ++c) {
    try {
      BlockScheduler::for_this_thread().run_cluster(static_cast<unsigned>(c) * cluster, cluster,
                                                    blocks, entry.threads_per_block, &run_thread,
                                                    &call);
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

// The norm operands in the launch's buffers.
NormOperands add_norm_operands(EmulatedBuffers& buffers, const EmulatedNormOperands& n) {
  return {add_operand(buffers, n.scale),        add_operand(buffers, n.shift),
          add_operand(buffers, n.running_mean), add_operand(buffers, n.running_var),
          add_operand(buffers, n.mean),         add_operand(buffers, n.invstd),
          add_operand(buffers, n.scale_grad),   add_operand(buffers, n.shift_grad),
          n.momentum};
}

// Copies the launch's outputs back to their destinations.
void copy_outputs(const EmulatedBuffers& buffers, const EmulatedLaunch& launch) {
  if (launch.out.spec != nullptr) buffers.copy_out(launch.out.spec->name, launch.out_destination);
  const EmulatedNormOperands& n = launch.norm;
  for (const EmulatedOperand* o : {&n.running_mean, &n.running_var, &n.mean, &n.invstd,
                                   &n.scale_grad, &n.shift_grad})
    if (o->data != nullptr && o->copy_back != nullptr) buffers.copy_out(o->spec->name, o->copy_back);
}

// The launch's buffers and constants, set up for its kernels to run one
// after another; the launch in flight while this lives.
class PreparedLaunch {
 public:
  explicit PreparedLaunch(const EmulatedLaunch& launch)
      : launch_(launch), scope_(buffers_, violations_) {}

  // Runs each kernel entry with `run(entry, call)`, which runs its blocks.
  template <class RunEntry>
  Status run(RunEntry&& run_entry) {
    const KernelSource& source = *launch_.source;
    if (Status s = bind_problem(source.constants); !s.is_ok()) return s;
    norm_ = add_norm_operands(buffers_, launch_.norm);
    GridCall call{nullptr,
                  add_operand(buffers_, launch_.in0),
                  add_operand(buffers_, launch_.in1),
                  launch_.out.spec == nullptr ? nullptr
                                              : buffers_.add(*launch_.out.spec, launch_.out.data),
                  launch_.alpha,
                  launch_.beta,
                  nullptr,
                  add_operand(buffers_, launch_.bias),
                  add_operand(buffers_, launch_.residual),
                  &norm_,
                  &maps_};
    // In units of the storage element, the workspace's smallest use.
    const std::size_t unit = element_size(launch_.kernels->dtype);
    if (source.workspace_bytes > 0)
      call.workspace = buffers_.add(
          {"workspace", BufferRole::scratch, unit,
           static_cast<std::int64_t>((source.workspace_bytes + unit - 1) / unit), {}},
          nullptr);
    // As the JIT does: its kernels find these bytes zero.
    if (source.zeroed_bytes > 0) buffers_.zero(zeroed_range(call.workspace), source.zeroed_bytes);
    workspace_ = call.workspace;
    if (Status s = bind_tensor_maps(call); !s.is_ok()) return s;
    for (const KernelEntry& entry : source.entries) {
      call.kernel = launch_.kernels->entry(entry.name);
      if (call.kernel == nullptr)
        return Status(CONVJIT_STATUS_INTERNAL_ERROR, fmt::format("the emulated {} has no entry {}",
                                                                 source.template_name, entry.name));
      launch_context().kernel_label = fmt::format("{} ({}) {}", source.template_name,
                                                  dtype_name(launch_.kernels->dtype), entry.name);
      if (entry.dynamic_shared_bytes > kOptInSharedLimit)
        return Status::invalid(fmt::format(
            "{} launches with {} bytes of dynamic shared memory, beyond the {} an sm_90 block "
            "may have",
            entry.name, entry.dynamic_shared_bytes, kOptInSharedLimit));
      launch_context().dynamic_shared_bytes = entry.dynamic_shared_bytes;
      buffers_.begin_kernel();
      if (Status s = run_entry(entry, std::as_const(call)); !s.is_ok()) return s;
    }
    return Status::ok();
  }

  [[nodiscard]] EmulatedBuffers& buffers() { return buffers_; }
  [[nodiscard]] const ViolationLog& violations() const { return violations_; }

  // Reports a launch that leaves the bytes its kernels must find zero
  // otherwise: the JIT zeroes them only in a workspace it did not give.
  void check_zeroed_left_zero() {
    const KernelSource& source = *launch_.source;
    if (source.zeroed_bytes == 0 || workspace_ == nullptr) return;
    if (!buffers_.is_zero(zeroed_range(workspace_), source.zeroed_bytes))
      violations_.report(fmt::format(
          "{}: leaves workspace bytes {} to {}, which its kernels must find zero, not zero",
          source.template_name, source.zeroed_offset, source.zeroed_offset + source.zeroed_bytes),
          -1);
  }

 private:
  [[nodiscard]] void* zeroed_range(void* workspace) const {
    return static_cast<std::byte*>(workspace) + launch_.source->zeroed_offset;
  }

  // The source's tensor maps over the call's buffers, as the driver would
  // encode them.
  Status bind_tensor_maps(const GridCall& call) {
    const auto& arguments = launch_.source->tensor_maps;
    const TensorMapOperands operands{call.in0, call.in1, call.out, call.workspace};
    if (Status s = convjit::bind_tensor_maps(arguments, operands, specs_); !s.is_ok()) return s;
    for (std::size_t i = 0; i < arguments.size(); ++i) maps_.map[i].spec = &specs_[i];
    return Status::ok();
  }

  const EmulatedLaunch& launch_;
  EmulatedBuffers buffers_;
  NormOperands norm_;
  TensorMapSpec specs_[kMaxTensorMaps];
  EmulatedTensorMaps maps_;
  ViolationLog violations_;
  void* workspace_ = nullptr;
  LaunchScope scope_;  // the launch in flight until this is gone
};

std::mutex& one_launch_at_a_time() {
  static std::mutex mutex;
  return mutex;
}

// Detaches the recorder however the sampled run ends.
struct RecorderScope {
  RecorderScope(BlockScheduler& block, AccessRecorder& recorder) : block_(block) {
    block_.set_recorder(&recorder);
  }
  ~RecorderScope() { block_.set_recorder(nullptr); }
  RecorderScope(const RecorderScope&) = delete;
  RecorderScope& operator=(const RecorderScope&) = delete;
  BlockScheduler& block_;
};

}  // namespace

Status emulate(const EmulatedLaunch& launch) {
  std::lock_guard lock(one_launch_at_a_time());
  PreparedLaunch prepared(launch);
  const Status s = prepared.run(
      [](const KernelEntry& entry, const GridCall& call) { return run_grid(call, entry); });
  if (!s.is_ok()) return s;
  prepared.buffers().report_unwritten_outputs();
  prepared.check_zeroed_left_zero();
  if (prepared.violations().count() > 0)
    return Status(CONVJIT_STATUS_EXECUTION_FAILED, "emulator: " + prepared.violations().summary());
  copy_outputs(prepared.buffers(), launch);
  return Status::ok();
}

std::vector<unsigned> sampled_blocks(unsigned blocks, unsigned sampled) {
  std::vector<unsigned> kept;
  if (blocks <= sampled) {
    for (unsigned b = 0; b < blocks; ++b) kept.push_back(b);
    return kept;
  }
  if (sampled <= 1) return {0};
  // Rounded to the nearest block; distinct since blocks > sampled.
  for (unsigned i = 0; i < sampled; ++i)
    kept.push_back(static_cast<unsigned>(
        (2ull * (blocks - 1) * i + (sampled - 1)) / (2ull * (sampled - 1))));
  return kept;
}

double grid_scale(const KernelEntry& entry, std::span<const unsigned> ran) {
  const auto blocks = static_cast<long long>(entry.blocks());
  const long long tiles = entry.persistent_tiles;
  const double even = static_cast<double>(blocks) / static_cast<double>(ran.size());
  if (tiles == 0 || entry.persistent_units != 0) return even;
  long long taken = 0;
  for (unsigned b : ran)
    if (b < tiles) taken += (tiles - b + blocks - 1) / blocks;
  return taken > 0 ? static_cast<double>(tiles) / static_cast<double>(taken) : even;
}

Result<std::vector<KernelMemoryCounters>> count_memory(const EmulatedLaunch& launch,
                                                       unsigned sampled) {
  std::lock_guard lock(one_launch_at_a_time());
  PreparedLaunch prepared(launch);
  launch_context().sampled = true;
  std::vector<KernelMemoryCounters> counters;
  const Status s = prepared.run([&](const KernelEntry& entry, const GridCall& call) {
    AccessRecorder recorder;
    BlockScheduler& block = BlockScheduler::for_this_thread();
    RecorderScope scope(block, recorder);
    // Whole clusters are sampled, as their blocks run together.
    if (Status whole = check_whole_clusters(entry); !whole.is_ok()) return whole;
    const unsigned blocks = entry.blocks(), cluster = entry.cluster_blocks;
    const std::vector<unsigned> kept = sampled_blocks(blocks / cluster, sampled);
    try {
      for (unsigned c : kept)
        block.run_cluster(c * cluster, cluster, blocks, entry.threads_per_block, &run_thread,
                          &call);
    } catch (const std::bad_alloc&) {
      return Status(CONVJIT_STATUS_OUT_OF_MEMORY, "the emulator could not map its fiber stacks");
    }
    std::vector<unsigned> ran;
    for (unsigned c : kept)
      for (unsigned b = 0; b < cluster; ++b) ran.push_back(c * cluster + b);
    KernelMemoryCounters k = recorder.counters(grid_scale(entry, ran));
    k.blocks = blocks;
    k.sampled_blocks = static_cast<unsigned>(ran.size());
    counters.push_back(std::move(k));
    return Status::ok();
  });
  if (!s.is_ok()) return s;
  return counters;
}

}  // namespace convjit::emulator
