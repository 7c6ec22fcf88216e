#include "cudnn/cudnn_backend.hpp"

#include <fmt/format.h>

#include "cuda/device_buffer.hpp"
#include "cudnn/cudnn_algorithm.hpp"
#include "cudnn/cudnn_descriptors.hpp"
#include "cudnn/cudnn_handles.hpp"
#include "settings.hpp"

namespace convjit {

namespace {

// What every cuDNN kernel holds: the device's primary context and the
// workspaces kept for callers that pass none.  A call makes the context
// current and takes this thread's handle for the device and stream.
class CudnnKernel : public Kernel {
 public:
  CudnnKernel(std::shared_ptr<DeviceContext> context, int ordinal, std::size_t workspace_bytes,
              std::string label)
      : context_(std::move(context)),
        ordinal_(ordinal),
        workspaces_(make_device_workspaces(workspace_bytes)),
        label_(std::move(label)) {}
  ~CudnnKernel() override {
    (void)context_->make_current();
    workspaces_.reset();  // device memory goes before the context is released
  }

  [[nodiscard]] Status execute(const ExecArgs& args) const final {
    if (Status s = context_->make_current(); !s.is_ok()) return s;
    auto handle = cudnn_handle(cudnn(), ordinal_, args.stream);
    if (!handle.is_ok()) return handle.status();
    auto workspace = workspaces_->for_call(args, label_);
    if (!workspace.is_ok()) return workspace.status();
    const float alpha = static_cast<float>(args.alpha), beta = static_cast<float>(args.beta);
    return run(handle.value(), args, workspace.value(), &alpha, &beta);
  }

 protected:
  static const CudnnLibrary& cudnn() { return CudnnLibrary::instance(); }
  [[nodiscard]] std::size_t workspace_bytes() const { return workspaces_->bytes(); }
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
  CudnnTensor x, y;
  CudnnTensor y_scratch;  // max-pool bwd: the recomputed y, packed
  CudnnPooling pooling;
};

// cuDNN's pooling backward reads y to find each window's maximum; convjit's
// pool bwd takes x and dy only, so max pooling recomputes y into the
// workspace first.  Average pooling reads neither: dy and dx stand in.
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
    const cudnnTensorDescriptor_t y_desc = mode_ == PoolingMode::max ? d_.y_scratch.get() : d_.y.get();
    const void* x = mode_ == PoolingMode::max ? args.x : args.out;
    if (mode_ == PoolingMode::max) {
      const float one = 1.0f, zero = 0.0f;
      if (Status s = cudnn().check(api.pooling_forward(handle, d_.pooling.get(), &one, d_.x.get(),
                                                       args.x, &zero, y_desc, workspace),
                                   "cudnnPoolingForward (recomputing y)");
          !s.is_ok())
        return s;
      y = workspace;
    }
    return cudnn().check(api.pooling_backward(handle, d_.pooling.get(), alpha, y_desc, y,
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

std::size_t element_count(const CudnnTensorShape& shape) {
  std::size_t n = 1;
  for (int i = 0; i < shape.rank; ++i) n *= static_cast<std::size_t>(shape.dims[i]);
  return n;
}

Status first_failure(std::initializer_list<Status> statuses) {
  for (const Status& s : statuses)
    if (!s.is_ok()) return s;
  return Status::ok();
}

// Variants needing more workspace than this are not measured: a winner
// would hold it on every stream it runs on.  The heuristics' first choice
// is always measured, as it serves the descriptor anyway.
constexpr std::size_t kMaxVariantWorkspace = std::size_t{1} << 30;

struct BuildContext {
  const OpDescriptor& desc;
  CudnnProblem problem;
  std::shared_ptr<DeviceContext> context;
  int ordinal;
  cudnnHandle_t handle;
  BuildTrace& trace;
};

// The device's context made current, and this thread's handle for it.
Result<BuildContext> open_build(const OpDescriptor& desc, const convjit_device_t& device,
                                BuildTrace& trace) {
  auto problem = cudnn_problem(desc);
  if (!problem.is_ok()) return problem.status();
  auto context = DeviceContext::open(device.ordinal);  // makes it current
  if (!context.is_ok()) return context.status();
  auto handle = cudnn_handle(CudnnLibrary::instance(), device.ordinal, nullptr);
  if (!handle.is_ok()) return handle.status();
  return BuildContext{desc, std::move(problem).value(), std::move(context).value(), device.ordinal,
                      handle.value(), trace};
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

// A kernel running `algorithm`, with descriptors of its own: the math type
// lives in the convolution descriptor, and algorithms differ in it.
Result<std::unique_ptr<Kernel>> convolution_kernel(const BuildContext& b,
                                                   const CudnnAlgorithm& algorithm) {
  auto d = convolution_descriptors(b, algorithm.math);
  if (!d.is_ok()) return d.status();
  return std::unique_ptr<Kernel>(std::make_unique<CudnnConvolutionKernel>(
      b.context, b.ordinal, b.desc.direction, std::move(d).value(), algorithm));
}

Result<std::unique_ptr<Kernel>> build_convolution(const BuildContext& b) {
  auto algorithms = convolution_algorithms(b);
  if (!algorithms.is_ok()) return algorithms.status();
  const CudnnAlgorithm& first = algorithms.value().front();
  b.trace.probes.push_back({"cuDNN " + CudnnLibrary::instance().version(),
                            "heuristics chose " + first.summary()});
  return convolution_kernel(b, first);
}

Result<std::vector<KernelVariant>> convolution_variants(const BuildContext& b) {
  auto algorithms = convolution_algorithms(b);
  if (!algorithms.is_ok()) return algorithms.status();
  std::vector<KernelVariant> variants;
  std::string measured, skipped;
  for (const CudnnAlgorithm& a : algorithms.value()) {
    if (!variants.empty() && a.workspace_bytes > kMaxVariantWorkspace) {
      skipped += fmt::format(" {} ({} B workspace)", a.id(), a.workspace_bytes);
      continue;
    }
    auto kernel = convolution_kernel(b, a);
    if (!kernel.is_ok()) return kernel.status();
    variants.push_back({a.id(), std::move(kernel).value()});
    measured += " " + a.id();
  }
  b.trace.probes.push_back(
      {"cuDNN " + CudnnLibrary::instance().version(),
       fmt::format("heuristics offer{}{}", measured, skipped.empty() ? "" : "; not measured:" + skipped)});
  return variants;
}

Result<std::unique_ptr<Kernel>> convolution_variant(const BuildContext& b, std::string_view id) {
  auto algorithms = convolution_algorithms(b);
  if (!algorithms.is_ok()) return algorithms.status();
  for (const CudnnAlgorithm& a : algorithms.value())
    if (a.id() == id) {
      b.trace.probes.push_back({"cuDNN " + CudnnLibrary::instance().version(), "tuned " + a.summary()});
      return convolution_kernel(b, a);
    }
  return Status::not_available(
      fmt::format("cuDNN's heuristics no longer offer {} for this descriptor", id));
}

Result<std::unique_ptr<Kernel>> build_pooling(const BuildContext& b) {
  const CudnnLibrary& cudnn = CudnnLibrary::instance();
  auto x = make_cudnn_tensor(cudnn, b.desc.dtype, b.problem.x);
  auto y = make_cudnn_tensor(cudnn, b.desc.dtype, b.problem.y);
  auto y_scratch = make_packed_cudnn_tensor(cudnn, b.desc.dtype, b.problem.y);
  auto pooling = make_cudnn_pooling(cudnn, b.problem, b.desc.pool_mode);
  if (Status s = first_failure({x.status(), y.status(), y_scratch.status(), pooling.status()}); !s.is_ok()) return s;
  const bool recompute_y = b.desc.direction == Direction::bwd && b.desc.pool_mode == PoolingMode::max;
  const std::size_t y_bytes =
      recompute_y ? element_count(b.problem.y) * element_size(b.desc.dtype) : 0;
  b.trace.probes.push_back({"cuDNN " + cudnn.version(),
                            recompute_y ? fmt::format("pooling, y recomputed in {} B", y_bytes)
                                        : std::string("pooling")});
  return std::unique_ptr<Kernel>(std::make_unique<CudnnPoolingKernel>(
      b.context, b.ordinal, b.desc.direction, b.desc.pool_mode,
      PoolingDescriptors{std::move(x).value(), std::move(y).value(), std::move(y_scratch).value(),
                         std::move(pooling).value()},
      y_bytes));
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
    return Status::not_available("cuDNN serves CUDA devices; the host uses the reference");
  if (Status s = CudaDriver::instance().available(); !s.is_ok()) return s;
  if (Status s = CudnnLibrary::instance().available(); !s.is_ok()) return s;
  auto problem = cudnn_problem(desc);
  return problem.is_ok() ? Status::ok() : problem.status();
}

Result<std::unique_ptr<Kernel>> CudnnBackend::build(const OpDescriptor& desc,
                                                    const convjit_device_t& device,
                                                    BuildTrace& trace) {
  auto b = open_build(desc, device, trace);
  if (!b.is_ok()) return b.status();
  if (desc.kind == OpKind::bias_grad) return build_bias(b.value());
  if (desc.is_pool()) return build_pooling(b.value());
  return build_convolution(b.value());
}

Result<std::vector<KernelVariant>> CudnnBackend::build_variants(const OpDescriptor& desc,
                                                                const convjit_device_t& device,
                                                                BuildTrace& trace) {
  if (!desc.is_conv()) return Backend::build_variants(desc, device, trace);
  auto b = open_build(desc, device, trace);
  if (!b.is_ok()) return b.status();
  return convolution_variants(b.value());
}

Result<std::unique_ptr<Kernel>> CudnnBackend::build_variant(const OpDescriptor& desc,
                                                            const convjit_device_t& device,
                                                            std::string_view id,
                                                            BuildTrace& trace) {
  if (!desc.is_conv() || id.empty()) return Backend::build_variant(desc, device, id, trace);
  auto b = open_build(desc, device, trace);
  if (!b.is_ok()) return b.status();
  return convolution_variant(b.value(), id);
}

}  // namespace convjit
