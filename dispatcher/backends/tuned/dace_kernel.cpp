#include "dispatcher/backends/tuned/dace_kernel.hpp"

#include <fmt/format.h>

#include <climits>
#include <memory>
#include <optional>

#include "dispatcher/cuda/device_buffer.hpp"

namespace convjit {

namespace {

constexpr const char* kInit = "__dace_init_conv";
constexpr const char* kExit = "__dace_exit_conv";
constexpr const char* kSetStreams = "__dace_gpu_set_all_streams";
constexpr const char* kProgram = "__program_conv";
constexpr const char* kWorkspaceSize = "__dace_get_external_memory_size_GPU_Global";
constexpr const char* kWorkspaceSet = "__dace_set_external_memory_GPU_Global";

// Concrete libraries take no batch; symbolic ones take B after the handle
// (init, workspace) or after the three pointers (program).
using InitFn = void* (*)();
using InitBatchFn = void* (*)(int);
using ExitFn = int (*)(void*);  // older DaCe returns void; the value is ignored
using SetStreamsFn = void (*)(void*, const void*);  // void in DaCe's generated code
using ProgramFn = void (*)(void*, void*, void*, void*, float, float);
using ProgramBatchFn = void (*)(void*, void*, void*, void*, int, float, float);
using WorkspaceSizeFn = std::size_t (*)(void*);
using WorkspaceSizeBatchFn = std::size_t (*)(void*, int);
using WorkspaceSetFn = void (*)(void*, void*);
using WorkspaceSetBatchFn = void (*)(void*, void*, int);

struct DaceEntryPoints {
  void* init = nullptr;
  void* exit = nullptr;
  void* set_streams = nullptr;  // present exactly in GPU libraries
  void* program = nullptr;
  void* workspace_size = nullptr;
  void* workspace_set = nullptr;
};

// A GPU library's code runs on the CUDA runtime, which works in the current
// context: every call into one (init, the workspace calls, the program,
// exit) runs with its device's primary context entered, and the caller's
// own context comes back after.  `context` is null for a host library.
class DeviceEntry {
 public:
  explicit DeviceEntry(const DeviceContext* context) {
    if (context != nullptr) scope_.emplace(context->get());
  }
  [[nodiscard]] Status status() const { return scope_ ? scope_->status() : Status::ok(); }

 private:
  std::optional<ContextScope> scope_;
};

class DaceKernel final : public TunedKernel {
 public:
  DaceKernel(SharedLibrary library, const DaceEntryPoints& entry, void* handle, int batch,
             bool symbolic, Direction direction, TunedWorkspace workspace,
             std::shared_ptr<DeviceContext> context)
      : TunedKernel(std::move(library)),
        entry_(entry),
        handle_(handle),
        batch_(batch),
        symbolic_(symbolic),
        direction_(direction),
        workspace_(std::move(workspace)),
        context_(std::move(context)) {
    const auto exit = reinterpret_cast<ExitFn>(entry.exit);
    enable_release_at_exit([exit, handle, context = context_] {
      const DeviceEntry entered(context.get());
      (void)exit(handle);
    });
  }

  [[nodiscard]] std::size_t workspace_bytes() const override { return workspace_.needed(); }

  [[nodiscard]] Status execute(const ExecArgs& args) const override {
    std::lock_guard lock(call_mutex_);
    if (released()) return Status::not_available(fmt::format("{} was unloaded", library_.path()));
    auto workspace = workspace_.for_call(args, library_.path());
    if (!workspace.is_ok()) return workspace.status();
    const DeviceEntry entered(context_.get());
    if (!entered.status().is_ok()) return entered.status();
    if (entry_.set_streams)
      reinterpret_cast<SetStreamsFn>(entry_.set_streams)(handle_, args.stream);
    if (workspace.value() != nullptr) set_workspace(workspace.value());
    run_program(args);
    return Status::ok();
  }

 private:
  void set_workspace(void* memory) const {
    if (symbolic_) {
      reinterpret_cast<WorkspaceSetBatchFn>(entry_.workspace_set)(handle_, memory, batch_);
    } else {
      reinterpret_cast<WorkspaceSetFn>(entry_.workspace_set)(handle_, memory);
    }
  }

  // DaCe's pointer order: fwd (w, x, y), bwddata (w, dx, dy), bwdfilt (dw, x, dy).
  void run_program(const ExecArgs& args) const {
    void* x = const_cast<void*>(args.x);
    void* w = const_cast<void*>(args.w);
    void* dy = const_cast<void*>(args.dy);
    void* p[3] = {w, x, args.out};
    if (direction_ == Direction::bwddata) p[0] = w, p[1] = args.out, p[2] = dy;
    if (direction_ == Direction::bwdfilt) p[0] = args.out, p[1] = x, p[2] = dy;
    const auto alpha = static_cast<float>(args.alpha), beta = static_cast<float>(args.beta);
    if (symbolic_) {
      reinterpret_cast<ProgramBatchFn>(entry_.program)(handle_, p[0], p[1], p[2], batch_, alpha,
                                                       beta);
    } else {
      reinterpret_cast<ProgramFn>(entry_.program)(handle_, p[0], p[1], p[2], alpha, beta);
    }
  }

  DaceEntryPoints entry_;
  void* handle_;
  int batch_;
  bool symbolic_;
  Direction direction_;
  mutable TunedWorkspace workspace_;
  std::shared_ptr<DeviceContext> context_;  // null for a host library
};

Status check_applicable(const OpDescriptor& desc, const convjit_device_t& device,
                        const DaceEntryPoints& entry) {
  if (!desc.is_conv() || desc.dtype != DataType::f32)
    return Status::unsupported("the DaCe ABI covers f32 convolutions only; use the convjit ABI");
  for (auto [symbol, name] :
       {std::pair{entry.init, kInit}, {entry.exit, kExit}, {entry.program, kProgram}})
    if (symbol == nullptr)
      return Status::unsupported(fmt::format("missing required DaCe symbol {}", name));
  if (entry.workspace_size != nullptr && entry.workspace_set == nullptr)
    return Status::unsupported(fmt::format("exports {} but not {}", kWorkspaceSize, kWorkspaceSet));
  const bool gpu_library = entry.set_streams != nullptr;
  if (gpu_library != (device.kind == CONVJIT_DEVICE_CUDA))
    return Status::unsupported(
        gpu_library
            ? fmt::format("a GPU DaCe library (exports {}); not used on the host device",
                          kSetStreams)
            : fmt::format("a CPU DaCe library (no {}); not used on a CUDA device", kSetStreams));
  if (desc.x_dims[0] > INT_MAX)
    return Status::unsupported(fmt::format("batch {} does not fit DaCe's int B", desc.x_dims[0]));
  return Status::ok();
}

}  // namespace

bool has_dace_abi(const SharedLibrary& library) { return library.symbol(kProgram) != nullptr; }

Result<std::unique_ptr<Kernel>> make_dace_kernel(SharedLibrary library,
                                                 const TunedCandidate& candidate,
                                                 const OpDescriptor& desc,
                                                 const convjit_device_t& device) {
  const DaceEntryPoints entry{library.symbol(kInit),          library.symbol(kExit),
                              library.symbol(kSetStreams),    library.symbol(kProgram),
                              library.symbol(kWorkspaceSize), library.symbol(kWorkspaceSet)};
  if (Status s = check_applicable(desc, device, entry); !s.is_ok()) return s;
  std::shared_ptr<DeviceContext> context;
  if (device.kind == CONVJIT_DEVICE_CUDA) {
    auto opened = DeviceContext::open(device.ordinal);
    if (!opened.is_ok()) return opened.status();
    context = std::move(opened).value();
  }
  const DeviceEntry entered(context.get());
  if (!entered.status().is_ok()) return entered.status();
  const int batch = static_cast<int>(desc.x_dims[0]);
  void* handle = candidate.symbolic ? reinterpret_cast<InitBatchFn>(entry.init)(batch)
                                    : reinterpret_cast<InitFn>(entry.init)();
  if (handle == nullptr) return Status::unsupported(fmt::format("{} returned NULL", kInit));
  std::size_t needed = 0;
  if (entry.workspace_size != nullptr)
    needed = candidate.symbolic
                 ? reinterpret_cast<WorkspaceSizeBatchFn>(entry.workspace_size)(handle, batch)
                 : reinterpret_cast<WorkspaceSizeFn>(entry.workspace_size)(handle);
  return std::unique_ptr<Kernel>(
      std::make_unique<DaceKernel>(std::move(library), entry, handle, batch, candidate.symbolic,
                                   desc.direction, TunedWorkspace(needed, device),
                                   std::move(context)));
}

}  // namespace convjit
