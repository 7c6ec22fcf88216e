#include "dispatcher/backends/cudnn/cudnn_backend.hpp"

#include "dispatcher/backends/jit/epilogue_after.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"

#include <fmt/format.h>

#include "dispatcher/backends/cudnn/cudnn_algorithm.hpp"
#include "dispatcher/backends/cudnn/cudnn_descriptors.hpp"
#include "dispatcher/backends/cudnn/cudnn_handles.hpp"
#include "dispatcher/backends/jit/epilogue_after.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/cuda/context_scope.hpp"
#include "dispatcher/cuda/device_buffer.hpp"
#include "dispatcher/settings.hpp"

namespace convjit {

namespace {

// What every cuDNN kernel holds: the device's primary context and the
// workspaces kept for callers that pass none.  A call enters the context
// (the caller's own comes back after) and takes this thread's handle for
// the device and stream.
class CudnnKernel : public Kernel {
 public:
  CudnnKernel(std::shared_ptr<DeviceContext> context, int ordinal, std::size_t workspace_bytes,
              std::string label)
      : context_(std::move(context)),
        ordinal_(ordinal),
        workspaces_(make_device_workspaces(workspace_bytes)),
        label_(std::move(label)) {}
  ~CudnnKernel() override {
    const ContextScope scope = context_->enter();
    workspaces_.reset();  // device memory goes before the context is released
  }

  // Allocates the first stream's workspace now, in the build's context.
  [[nodiscard]] Status reserve_workspace() { return workspaces_->reserve(); }
  [[nodiscard]] std::size_t workspace_bytes() const final { return workspaces_->bytes(); }

  [[nodiscard]] Status execute(const ExecArgs& args) const final {
    const ContextScope scope = context_->enter();
    if (!scope.status().is_ok()) return scope.status();
    auto handle = cudnn_handle(cudnn(), ordinal_, args.stream);
    if (!handle.is_ok()) return handle.status();
    auto workspace = workspaces_->for_call(args, label_);
    if (!workspace.is_ok()) return workspace.status();
    const float alpha = static_cast<float>(args.alpha), beta = static_cast<float>(args.beta);
    return run(handle.value(), args, workspace.value(), &alpha, &beta);
  }

 protected:
  static const CudnnLibrary& cudnn() { return CudnnLibrary::instance(); }
  [[nodiscard]] virtual Status run(cudnnHandle_t handle, const ExecArgs& args, void* workspace,
                                   const float* alpha, const float* beta) const = 0;

 private:
  std::shared_ptr<DeviceContext> context_;
  int ordinal_;
  std::unique_ptr<StreamWorkspaces> workspaces_;
  std::string label_;
};

struct ConvolutionDescriptors {
  CudnnTensor x, y;
  CudnnFilter w;
  CudnnConvolution convolution;
};

class CudnnConvolutionKernel final : public CudnnKernel {
 public:
  CudnnConvolutionKernel(std::shared_ptr<DeviceContext> context, int ordinal, Direction direction,
                         ConvolutionDescriptors descriptors, CudnnAlgorithm algorithm)
      : CudnnKernel(std::move(context), ordinal, algorithm.workspace_bytes,
                    "cuDNN's " + algorithm.summary()),
        direction_(direction),
        d_(std::move(descriptors)),
        algorithm_(algorithm) {}

 private:
  [[nodiscard]] Status run(cudnnHandle_t handle, const ExecArgs& args, void* workspace,
                           const float* alpha, const float* beta) const override {
    const CudnnApi& api = cudnn().api();
    switch (direction_) {
      case Direction::bwddata:
        return cudnn().check(
            api.convolution_backward_data(
                handle, alpha, d_.w.get(), args.w, d_.y.get(), args.dy, d_.convolution.get(),
                static_cast<cudnnConvolutionBwdDataAlgo_t>(algorithm_.algorithm), workspace,
                workspace_bytes(), beta, d_.x.get(), args.out),
            "cudnnConvolutionBackwardData");
      case Direction::bwdfilt:
        return cudnn().check(
            api.convolution_backward_filter(
                handle, alpha, d_.x.get(), args.x, d_.y.get(), args.dy, d_.convolution.get(),
                static_cast<cudnnConvolutionBwdFilterAlgo_t>(algorithm_.algorithm), workspace,
                workspace_bytes(), beta, d_.w.get(), args.out),
            "cudnnConvolutionBackwardFilter");
      default:
        return cudnn().check(
            api.convolution_forward(handle, alpha, d_.x.get(), args.x, d_.w.get(), args.w,
                                    d_.convolution.get(),
                                    static_cast<cudnnConvolutionFwdAlgo_t>(algorithm_.algorithm),
                                    workspace, workspace_bytes(), beta, d_.y.get(), args.out),
            "cudnnConvolutionForward");
    }
  }

  Direction direction_;
  ConvolutionDescriptors d_;
  CudnnAlgorithm algorithm_;
};

struct PoolingDescriptors {
  CudnnTensor x, y;  // bwd: dx and dy
  CudnnPooling pooling;
};

// cuDNN's pooling backward reads y to find each window's maximum; convjit's
// pool bwd takes x and dy only, so max pooling recomputes y into the
// workspace first.  The recomputed y is laid out with dy's own strides,
// as cudnnPoolingBackward refuses (BAD_PARAM) a y and dy whose strides
// differ, so dy's descriptor serves both.  Average pooling reads neither:
// dy and dx stand in.
class CudnnPoolingKernel final : public CudnnKernel {
 public:
  CudnnPoolingKernel(std::shared_ptr<DeviceContext> context, int ordinal, Direction direction,
                     PoolingMode mode, PoolingDescriptors descriptors, std::size_t y_bytes)
      : CudnnKernel(std::move(context), ordinal, y_bytes, "cuDNN's max-pool backward"),
        direction_(direction),
        mode_(mode),
        d_(std::move(descriptors)) {}

 private:
  [[nodiscard]] Status run(cudnnHandle_t handle, const ExecArgs& args, void* workspace,
                           const float* alpha, const float* beta) const override {
    const CudnnApi& api = cudnn().api();
    if (direction_ == Direction::fwd)
      return cudnn().check(api.pooling_forward(handle, d_.pooling.get(), alpha, d_.x.get(), args.x,
                                               beta, d_.y.get(), args.out),
                           "cudnnPoolingForward");
    const void* y = args.dy;
    const void* x = mode_ == PoolingMode::max ? args.x : args.out;
    if (mode_ == PoolingMode::max) {
      const float one = 1.0f, zero = 0.0f;
      if (Status s = cudnn().check(api.pooling_forward(handle, d_.pooling.get(), &one, d_.x.get(),
                                                       args.x, &zero, d_.y.get(), workspace),
                                   "cudnnPoolingForward (recomputing y)");
          !s.is_ok())
        return s;
      y = workspace;
    }
    return cudnn().check(api.pooling_backward(handle, d_.pooling.get(), alpha, d_.y.get(), y,
                                              d_.y.get(), args.dy, d_.x.get(), x, beta, d_.x.get(),
                                              args.out),
                         "cudnnPoolingBackward");
  }

  Direction direction_;
  PoolingMode mode_;
  PoolingDescriptors d_;
};

class CudnnBiasKernel final : public CudnnKernel {
 public:
  CudnnBiasKernel(std::shared_ptr<DeviceContext> context, int ordinal, CudnnTensor dy,
                  CudnnTensor db)
      : CudnnKernel(std::move(context), ordinal, 0, "cuDNN's bias gradient"),
        dy_(std::move(dy)),
        db_(std::move(db)) {}

 private:
  [[nodiscard]] Status run(cudnnHandle_t handle, const ExecArgs& args, void* /*workspace*/,
                           const float* alpha, const float* beta) const override {
    return cudnn().check(cudnn().api().convolution_backward_bias(handle, alpha, dy_.get(), args.dy,
                                                                  beta, db_.get(), args.out),
                         "cudnnConvolutionBackwardBias");
  }

  CudnnTensor dy_, db_;
};

Status first_failure(std::initializer_list<Status> statuses) {
  for (const Status& s : statuses)
    if (!s.is_ok()) return s;
  return Status::ok();
}

struct BuildContext {
  const OpDescriptor& desc;
  CudnnProblem problem;
  std::shared_ptr<DeviceContext> context;
  int ordinal;
  cudnnHandle_t handle;
  std::size_t workspace_cap;
  BuildTrace& trace;
};

// The most workspace an algorithm may take now: the setting, and never
// more than the device has free.
std::size_t build_workspace_cap() {
  const std::size_t limit = SettingsStore::instance().snapshot()->cudnn_workspace_limit_mib.value
                            << 20;
  std::size_t free = 0, total = 0;
  if (CudaDriver::instance().api().mem_get_info(&free, &total) != CUDA_SUCCESS) return limit;
  return workspace_cap(limit, free);
}

// Runs `build` with the device's context entered (the caller's comes back
// after) and this thread's cuDNN handle for it.
template <class Build>
auto in_build(const OpDescriptor& desc, const convjit_device_t& device, BuildTrace& trace,
              Build build) -> decltype(build(std::declval<const BuildContext&>())) {
  auto problem = cudnn_problem(desc);
  if (!problem.is_ok()) return problem.status();
  auto opened = DeviceContext::open(device.ordinal);
  if (!opened.is_ok()) return opened.status();
  // Held past the scope, so a failed build releases the context only once it is popped.
  const std::shared_ptr<DeviceContext> context = std::move(opened).value();
  const ContextScope scope = context->enter();
  if (!scope.status().is_ok()) return scope.status();
  auto handle = cudnn_handle(CudnnLibrary::instance(), device.ordinal, nullptr);
  if (!handle.is_ok()) return handle.status();
  return build(BuildContext{desc, std::move(problem).value(), context, device.ordinal,
                            handle.value(), build_workspace_cap(), trace});
}

Result<ConvolutionDescriptors> convolution_descriptors(const BuildContext& b, cudnnMathType_t math) {
  const CudnnLibrary& cudnn = CudnnLibrary::instance();
  auto x = make_cudnn_tensor(cudnn, b.desc.dtype, b.problem.x);
  auto y = make_cudnn_tensor(cudnn, b.desc.dtype, b.problem.y);
  auto w = make_cudnn_filter(cudnn, b.desc.dtype, b.problem);
  auto conv = make_cudnn_convolution(cudnn, b.problem, math);
  if (Status s = first_failure({x.status(), y.status(), w.status(), conv.status()}); !s.is_ok()) return s;
  return ConvolutionDescriptors{std::move(x).value(), std::move(y).value(), std::move(w).value(),
                                std::move(conv).value()};
}

// The heuristics' usable algorithms, best first.
Result<std::vector<CudnnAlgorithm>> convolution_algorithms(const BuildContext& b) {
  const bool allow_tf32 = SettingsStore::instance().snapshot()->allow_tf32.value;
  auto d = convolution_descriptors(b, initial_math_type(b.desc.dtype, allow_tf32));
  if (!d.is_ok()) return d.status();
  const ConvolutionDescriptors& q = d.value();
  return ranked_cudnn_algorithms(CudnnLibrary::instance(), b.handle,
                                 {q.x.get(), q.w.get(), q.y.get(), q.convolution.get()},
                                 b.desc.direction, b.desc.dtype, allow_tf32);
}

// Of `ranked`, those cuDNN confirms for these descriptors and whose
// workspace fits the cap, with the workspace cuDNN gave.
std::vector<CudnnAlgorithm> confirmed_algorithms(const BuildContext& b,
                                                 std::span<const CudnnAlgorithm> ranked,
                                                 std::string& passed_over) {
  return confirmed_cudnn_algorithms(
      ranked, b.workspace_cap,
      [&](const CudnnAlgorithm& a) -> Result<std::size_t> {
        auto d = convolution_descriptors(b, a.math);  // the math type decides what runs
        if (!d.is_ok()) return d.status();
        const ConvolutionDescriptors& q = d.value();
        return cudnn_workspace_size(CudnnLibrary::instance(), b.handle,
                                    {q.x.get(), q.w.get(), q.y.get(), q.convolution.get()},
                                    b.desc.direction, a.algorithm);
      },
      passed_over);
}

// A kernel running `algorithm`, with descriptors of its own: the math type
// lives in the convolution descriptor, and algorithms differ in it.
// `reserve`: its workspace is allocated now.
Result<std::unique_ptr<Kernel>> convolution_kernel(const BuildContext& b,
                                                   const CudnnAlgorithm& algorithm, bool reserve) {
  auto d = convolution_descriptors(b, algorithm.math);
  if (!d.is_ok()) return d.status();
  auto kernel = std::make_unique<CudnnConvolutionKernel>(b.context, b.ordinal, b.desc.direction,
                                                         std::move(d).value(), algorithm);
  if (reserve)
    if (Status s = kernel->reserve_workspace(); !s.is_ok()) return s;
  return std::unique_ptr<Kernel>(std::move(kernel));
}

// The first algorithm, in the heuristics' order, that is confirmed, fits
// the cap and gets its workspace.
Result<std::unique_ptr<Kernel>> first_workable(const BuildContext& b,
                                               std::span<const CudnnAlgorithm> ranked,
                                               std::string_view chose) {
  std::string passed_over;
  const std::vector<CudnnAlgorithm> confirmed = confirmed_algorithms(b, ranked, passed_over);
  return first_workable_cudnn_algorithm(
      std::span<const CudnnAlgorithm>(confirmed),
      [&](const CudnnAlgorithm& a) {
        auto kernel = convolution_kernel(b, a, /*reserve=*/true);
        if (kernel.is_ok())
          b.trace.probes.push_back(
              {"cuDNN " + CudnnLibrary::instance().version(),
               fmt::format("{} {}{}", chose, a.summary(),
                           passed_over.empty() ? "" : "; passed over " + passed_over)});
        return kernel;
      },
      passed_over);
}

Result<std::unique_ptr<Kernel>> build_convolution(const BuildContext& b) {
  auto algorithms = convolution_algorithms(b);
  if (!algorithms.is_ok()) return algorithms.status();
  return first_workable(b, algorithms.value(), "heuristics chose");
}

// Every confirmed algorithm that fits the cap, for measuring.  Their
// workspaces are not reserved: only the winner keeps one, and it is
// rebuilt through convolution_variant, which reserves.
Result<std::vector<KernelVariant>> convolution_variants(const BuildContext& b) {
  auto algorithms = convolution_algorithms(b);
  if (!algorithms.is_ok()) return algorithms.status();
  std::string passed_over;
  std::vector<KernelVariant> variants;
  std::string measured;
  for (const CudnnAlgorithm& a : confirmed_algorithms(b, algorithms.value(), passed_over)) {
    auto kernel = convolution_kernel(b, a, /*reserve=*/false);
    if (!kernel.is_ok()) return kernel.status();
    variants.push_back({a.id(), std::move(kernel).value()});
    measured += " " + a.id();
  }
  b.trace.probes.push_back(
      {"cuDNN " + CudnnLibrary::instance().version(),
       fmt::format("heuristics offer{}{}", measured.empty() ? " nothing usable" : measured,
                   passed_over.empty() ? "" : "; not measured: " + passed_over)});
  if (variants.empty())
    return Status::unsupported("cuDNN offers no algorithm that can run here: " + passed_over);
  return variants;
}

Result<std::unique_ptr<Kernel>> convolution_variant(const BuildContext& b, std::string_view id) {
  auto algorithms = convolution_algorithms(b);
  if (!algorithms.is_ok()) return algorithms.status();
  for (const CudnnAlgorithm& a : algorithms.value())
    if (a.id() == id) return first_workable(b, std::span(&a, 1), "tuned");
  return Status::not_available(
      fmt::format("cuDNN's heuristics no longer offer {} for this descriptor", id));
}

Result<std::unique_ptr<Kernel>> build_pooling(const BuildContext& b) {
  const CudnnLibrary& cudnn = CudnnLibrary::instance();
  auto x = make_cudnn_tensor(cudnn, b.desc.dtype, b.problem.x);
  auto y = make_cudnn_tensor(cudnn, b.desc.dtype, b.problem.y);
  auto pooling = make_cudnn_pooling(cudnn, b.problem, b.desc.pool_mode);
  if (Status s = first_failure({x.status(), y.status(), pooling.status()}); !s.is_ok()) return s;
  const bool recompute_y = b.desc.direction == Direction::bwd && b.desc.pool_mode == PoolingMode::max;
  const std::size_t y_bytes =
      recompute_y ? element_span(b.problem.y) * element_size(b.desc.dtype) : 0;
  b.trace.probes.push_back({"cuDNN " + cudnn.version(),
                            recompute_y ? fmt::format("pooling, y recomputed in {} B", y_bytes)
                                        : std::string("pooling")});
  auto kernel = std::make_unique<CudnnPoolingKernel>(
      b.context, b.ordinal, b.desc.direction, b.desc.pool_mode,
      PoolingDescriptors{std::move(x).value(), std::move(y).value(), std::move(pooling).value()},
      y_bytes);
  if (Status s = kernel->reserve_workspace(); !s.is_ok()) return s;
  return std::unique_ptr<Kernel>(std::move(kernel));
}

Result<std::unique_ptr<Kernel>> build_bias(const BuildContext& b) {
  const CudnnLibrary& cudnn = CudnnLibrary::instance();
  auto dy = make_cudnn_tensor(cudnn, b.desc.dtype, b.problem.y);
  auto db = make_cudnn_tensor(cudnn, b.desc.dtype, b.problem.w);
  if (Status s = first_failure({dy.status(), db.status()}); !s.is_ok()) return s;
  b.trace.probes.push_back({"cuDNN " + cudnn.version(), "bias gradient"});
  return std::unique_ptr<Kernel>(std::make_unique<CudnnBiasKernel>(
      b.context, b.ordinal, std::move(dy).value(), std::move(db).value()));
}

}  // namespace

Status CudnnBackend::check_support(const OpDescriptor& desc, const convjit_device_t& device) const {
  if (device.kind != CONVJIT_DEVICE_CUDA)
    return Status::not_available(
        "cuDNN serves CUDA devices; the host uses oneDNN and the reference");
  if (Status s = CudaDriver::instance().available(); !s.is_ok()) return s;
  if (Status s = CudnnLibrary::instance().available(); !s.is_ok()) return s;
  auto problem = cudnn_problem(without_epilogue(desc));
  if (!problem.is_ok()) return problem.status();
  if (desc.has_epilogue())
    if (Status s = epilogue_passes_.check_support(desc, device); !s.is_ok())
      return Status(s.code(), "cuDNN runs the plain conv, and its epilogue pass needs the JIT: " +
                                  s.message());
  return Status::ok();
}

Result<std::unique_ptr<Kernel>> CudnnBackend::with_epilogue_pass(const OpDescriptor& desc,
                                                                 const convjit_device_t& device,
                                                                 std::unique_ptr<Kernel> plain,
                                                                 BuildTrace& trace) {
  auto pass = epilogue_passes_.build_variant(desc, device, kEpiloguePassVariant, trace);
  if (!pass.is_ok()) return pass.status();
  auto context = DeviceContext::open(device.ordinal);
  if (!context.is_ok()) return context.status();
  return epilogue_after(std::move(plain), std::move(pass).value(),
                        make_device_workspaces(epilogue_temporary_bytes(desc)),
                        std::move(context).value());
}

Result<std::unique_ptr<Kernel>> CudnnBackend::build(const OpDescriptor& desc,
                                                    const convjit_device_t& device,
                                                    BuildTrace& trace) {
  if (desc.has_epilogue()) {
    auto plain = build(without_epilogue(desc), device, trace);
    if (!plain.is_ok()) return plain.status();
    return with_epilogue_pass(desc, device, std::move(plain).value(), trace);
  }
  return in_build(desc, device, trace, [](const BuildContext& b) {
    if (b.desc.kind == OpKind::bias_grad) return build_bias(b);
    if (b.desc.is_pool()) return build_pooling(b);
    return build_convolution(b);
  });
}

Result<std::vector<KernelVariant>> CudnnBackend::build_variants(const OpDescriptor& desc,
                                                                const convjit_device_t& device,
                                                                BuildTrace& trace) {
  if (!desc.is_conv()) return Backend::build_variants(desc, device, trace);
  if (desc.has_epilogue()) {
    auto plain = build_variants(without_epilogue(desc), device, trace);
    if (!plain.is_ok()) return plain.status();
    for (KernelVariant& v : plain.value()) {
      auto fused = with_epilogue_pass(desc, device, std::move(v.kernel), trace);
      if (!fused.is_ok()) return fused.status();
      v.kernel = std::move(fused).value();
    }
    return plain;
  }
  return in_build(desc, device, trace, convolution_variants);
}

Result<std::unique_ptr<Kernel>> CudnnBackend::build_variant(const OpDescriptor& desc,
                                                            const convjit_device_t& device,
                                                            std::string_view id,
                                                            BuildTrace& trace) {
  if (!desc.is_conv() || id.empty()) return Backend::build_variant(desc, device, id, trace);
  if (desc.has_epilogue()) {
    auto plain = build_variant(without_epilogue(desc), device, id, trace);
    if (!plain.is_ok()) return plain.status();
    return with_epilogue_pass(desc, device, std::move(plain).value(), trace);
  }
  return in_build(desc, device, trace,
                  [id](const BuildContext& b) { return convolution_variant(b, id); });
}

}  // namespace convjit
