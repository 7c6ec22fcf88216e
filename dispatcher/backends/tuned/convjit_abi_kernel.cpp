#include "dispatcher/backends/tuned/convjit_abi_kernel.hpp"

#include <fmt/format.h>

#include <string_view>

#include "convjit/kernel_abi.h"

namespace convjit {

namespace {

constexpr const char* kVersion = "convjit_kernel_abi_version";
constexpr const char* kDescriptor = "convjit_kernel_descriptor";
constexpr const char* kDevice = "convjit_kernel_device";
constexpr const char* kRun = "convjit_kernel_run";
constexpr const char* kAbiWorkspaceSize = "convjit_kernel_workspace_size";

class ConvjitAbiKernel final : public TunedKernel {
 public:
  ConvjitAbiKernel(SharedLibrary library, convjit_kernel_run_fn run, std::int64_t batch,
                   bool batchnorm, TunedWorkspace workspace)
      : TunedKernel(std::move(library)),
        run_(run),
        batch_(batch),
        batchnorm_(batchnorm),
        workspace_(std::move(workspace)) {
    enable_release_at_exit({});
  }

  [[nodiscard]] std::size_t workspace_bytes() const override { return workspace_.needed(); }

  // The convjit ABI's run is reentrant (all state comes in args), so calls
  // run concurrently; only the kernel's own workspace is shared and locked.
  [[nodiscard]] Status execute(const ExecArgs& args) const override {
    if (released()) return Status::not_available(fmt::format("{} was unloaded", library_.path()));
    auto workspace = workspace_.for_call(args, library_.path());
    if (!workspace.is_ok()) return workspace.status();
    std::unique_lock lock(call_mutex_, std::defer_lock);
    if (workspace.value() != nullptr && workspace.value() != args.workspace) lock.lock();
    const NormOperands& n = args.norm;
    const convjit_kernel_norm_args_t norm{n.scale,      n.shift,      n.running_mean,
                                          n.running_var, n.mean,      n.invstd,
                                          n.scale_grad, n.shift_grad, n.momentum};
    const convjit_kernel_args_t call{CONVJIT_KERNEL_ABI_VERSION,
                                     args.x,
                                     args.w,
                                     args.dy,
                                     args.out,
                                     args.alpha,
                                     args.beta,
                                     workspace.value(),
                                     workspace_.needed(),
                                     args.stream,
                                     batch_,
                                     batchnorm_ ? &norm : nullptr};
    if (const int code = run_(&call); code != 0)
      return {CONVJIT_STATUS_EXECUTION_FAILED,
              fmt::format("{}: {} returned {}", library_.path(), kRun, code)};
    return Status::ok();
  }

 private:
  convjit_kernel_run_fn run_;
  std::int64_t batch_;
  bool batchnorm_;
  mutable TunedWorkspace workspace_;
};

Status check_identity(const SharedLibrary& lib, const TunedCandidate& candidate,
                      const OpDescriptor& desc, const convjit_device_t& device) {
  const auto version = lib.function<convjit_kernel_abi_version_fn>(kVersion);
  const auto descriptor = lib.function<convjit_kernel_descriptor_fn>(kDescriptor);
  const auto kernel_device = lib.function<convjit_kernel_device_fn>(kDevice);
  for (auto [symbol, name] :
       {std::pair<void*, const char*>{reinterpret_cast<void*>(descriptor), kDescriptor},
        {reinterpret_cast<void*>(kernel_device), kDevice},
        {lib.symbol(kRun), kRun}})
    if (symbol == nullptr)
      return Status::unsupported(fmt::format("missing required symbol {}", name));
  const std::uint32_t v = version();
  if (v < CONVJIT_KERNEL_ABI_OLDEST_VERSION || v > CONVJIT_KERNEL_ABI_VERSION)
    return Status::unsupported(
        fmt::format("convjit kernel ABI version {}, but this convjit speaks {} to {}", v,
                    CONVJIT_KERNEL_ABI_OLDEST_VERSION, CONVJIT_KERNEL_ABI_VERSION));
  if (desc.is_batchnorm() && v < 2)
    return Status::unsupported(fmt::format(
        "convjit kernel ABI version {} passes no batchnorm operands; a batchnorm library must "
        "declare version 2",
        v));
  const char* implemented = descriptor();
  if (implemented == nullptr || std::string_view(implemented) != candidate.name)
    return Status::unsupported(fmt::format("implements '{}', not the '{}' its file name says",
                                           implemented ? implemented : "(null)", candidate.name));
  if (const int kind = kernel_device(); kind != static_cast<int>(device.kind))
    return Status::unsupported(fmt::format(
        "built for the {} device, not {}", kind == CONVJIT_DEVICE_HOST ? "host" : "CUDA",
        device.kind == CONVJIT_DEVICE_HOST ? "the host" : "CUDA"));
  return Status::ok();
}

}  // namespace

bool has_convjit_abi(const SharedLibrary& library) { return library.symbol(kVersion) != nullptr; }

Result<std::unique_ptr<Kernel>> make_convjit_abi_kernel(SharedLibrary library,
                                                        const TunedCandidate& candidate,
                                                        const OpDescriptor& desc,
                                                        const convjit_device_t& device) {
  if (Status s = check_identity(library, candidate, desc, device); !s.is_ok()) return s;
  const std::int64_t batch = desc.kind == OpKind::bias_grad ? desc.y_dims[0] : desc.x_dims[0];
  const auto workspace_size = library.function<convjit_kernel_workspace_size_fn>(kAbiWorkspaceSize);
  const std::size_t needed = workspace_size ? workspace_size(batch) : 0;
  const auto run = library.function<convjit_kernel_run_fn>(kRun);
  return std::unique_ptr<Kernel>(std::make_unique<ConvjitAbiKernel>(
      std::move(library), run, batch, desc.is_batchnorm(), TunedWorkspace(needed, device)));
}

}  // namespace convjit
