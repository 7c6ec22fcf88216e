#include "dispatcher/backends/onednn/onednn_batchnorm.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <optional>
#include <vector>

#include "dispatcher/backends/onednn/batch_statistics.hpp"
#include "dispatcher/backends/onednn/channel_sums.hpp"
#include "dispatcher/backends/onednn/onednn_primitive_descs.hpp"
#include "dispatcher/backends/onednn/onednn_program.hpp"
#include "dispatcher/backends/reference/batchnorm_formulas.hpp"
#include "dispatcher/backends/reference/dtype_dispatch.hpp"
#include "dispatcher/backends/reference/tensor_view.hpp"

namespace convjit {

namespace {

// oneDNN's elementwise algorithm (and its alpha) for a fused activation.
struct EltwiseActivation {
  dnnl_alg_kind_t algorithm;
  float alpha;
};

Result<EltwiseActivation> eltwise_activation(Activation activation) {
  switch (activation) {
    case Activation::relu:
      return EltwiseActivation{dnnl_eltwise_relu, 0.0f};  // alpha: the negative slope
    case Activation::silu:
      return EltwiseActivation{dnnl_eltwise_swish, 1.0f};  // x sigmoid(alpha x)
    default:
      return Status::unsupported(fmt::format("no oneDNN elementwise op fuses {} into a batchnorm",
                                             activation_name(activation)));
  }
}

class OnednnBatchnormKernel final : public Kernel {
 public:
  OnednnBatchnormKernel(const OpDescriptor& d, const OnednnProblem& p, OnednnStream main,
                        OnednnStream tail)
      : d_(d),
        main_(std::move(main)),
        tail_(std::move(tail)),
        x_(canonical_view(d.x_dims, d.x_strides, d.spatial_dims)),
        y_(canonical_view(d.y_dims, d.y_strides, d.spatial_dims)),
        count_(x_.dims[0] * x_.spatial_size()),
        epsilon_(static_cast<float>(d.norm_epsilon())),
        training_(!d.has_norm_flag(kNormInference)),
        same_layout_(p.x.strides == p.y.strides) {}

  [[nodiscard]] Status assemble(const OnednnProblem& p, std::string& note);
  [[nodiscard]] Status execute(const ExecArgs& args) const override;

 private:
  using Args = std::vector<dnnl_exec_arg_t>;

  [[nodiscard]] bool forward() const { return d_.direction == Direction::fwd; }
  [[nodiscard]] bool writes_output() const { return forward() || d_.has_norm_flag(kNormGradInput); }
  // A backward uses the parameters it has or is asked the gradient of.
  [[nodiscard]] bool use_scale() const {
    return d_.has_norm_flag(kNormScale) || (!forward() && d_.has_norm_flag(kNormGradScale));
  }
  [[nodiscard]] bool use_shift() const {
    return d_.has_norm_flag(kNormShift) || (!forward() && d_.has_norm_flag(kNormGradShift));
  }
  [[nodiscard]] unsigned flags() const;

  [[nodiscard]] Result<dnnl_memory_t> owned_channels(float fill, float*& data);
  [[nodiscard]] Result<dnnl_memory_t> f32_input(OnednnOperand operand, const OnednnTensor& given,
                                                const OnednnTensor& x, const char* what,
                                                const float*& copy);
  [[nodiscard]] Status add_channel_args(Args& channel, Args& gradients);
  [[nodiscard]] Status add_forward(dnnl_memory_t x, const Args& channel, std::string& note);
  [[nodiscard]] Status add_backward(const OnednnProblem& p, dnnl_memory_t x, const Args& channel,
                                    const Args& gradients, std::string& note);
  [[nodiscard]] Result<dnnl_memory_t> add_activation_gradient(dnnl_memory_t x, dnnl_memory_t dy,
                                                              const Args& channel);
  [[nodiscard]] Status add_tail(const OnednnProblem& p);

  void batch_statistics(const ExecArgs& args) const;
  void finish_statistics(const ExecArgs& args) const;
  void parameter_gradients(const ExecArgs& args) const;
  void store_blended(const ExecArgs& args) const;

  OpDescriptor d_;
  OnednnProgram main_;  // f32 in x's layout, into the result
  OnednnProgram tail_;  // the f32 result reordered into the caller's output
  View5 x_, y_;
  std::int64_t count_;  // values per channel
  float epsilon_;
  bool training_;
  bool same_layout_;  // x and y strided alike
  dnnl_memory_desc_t data_md_{};
  dnnl_memory_desc_t channel_md_{};
  mutable std::optional<BatchStatistics> statistics_;  // fwd training
  mutable std::optional<ChannelSums> gradient_sums_;   // bwd with parameter gradients
  mutable std::vector<double> means_;                  // their per-channel centers
  float* mean_ = nullptr;                              // fwd training: the batch's, for oneDNN
  float* variance_ = nullptr;    // training: the batch's (fwd), from the saved invstd (bwd)
  const float* x32_ = nullptr;   // x's f32 copy, null where oneDNN reads x itself
  const float* dy32_ = nullptr;  // a bwd's f32 dy (through the activation), null: dy itself
  HostBuffer result_;            // the f32 result, in x's layout
  mutable std::mutex mutex_;
};

// A forward always normalises with given statistics: in training, the
// batch's, summed by convjit (batch_statistics.hpp says why).
unsigned OnednnBatchnormKernel::flags() const {
  unsigned f = training_ && !forward() ? 0U : static_cast<unsigned>(dnnl_use_global_stats);
  if (use_scale()) f |= dnnl_use_scale;
  if (use_shift()) f |= dnnl_use_shift;
  return f;
}

// C f32 values of the kernel's, filled with `fill`.
Result<dnnl_memory_t> OnednnBatchnormKernel::owned_channels(float fill, float*& data) {
  auto owned = main_.owned_memory(channel_md_, "a per-channel operand");
  if (!owned.is_ok()) return owned.status();
  data = static_cast<float*>(owned.value().data);
  std::fill_n(data, x_.dims[1], fill);
  return owned.value().memory;
}

// The caller's `operand` (laid out as `given`) as f32 in x's layout: itself
// where it already is, else a copy that a reorder step fills (`copy`).
Result<dnnl_memory_t> OnednnBatchnormKernel::f32_input(OnednnOperand operand,
                                                       const OnednnTensor& given,
                                                       const OnednnTensor& x, const char* what,
                                                       const float*& copy_data) {
  if (d_.dtype == DataType::f32 && given.strides == x.strides)
    return main_.operand_memory(operand, data_md_);
  auto given_md = strided_md(given, d_.dtype);
  if (!given_md.is_ok()) return given_md.status();
  auto source = main_.operand_memory(operand, given_md.value());
  auto copy = main_.owned_memory(data_md_, what);
  auto reorder = reorder_pd(given_md.value(), data_md_);
  for (const Status& s : {source.status(), copy.status(), reorder.status()})
    if (!s.is_ok()) return s;
  if (Status s = main_.add_step(reorder.value().get(), {{DNNL_ARG_FROM, source.value()},
                                                        {DNNL_ARG_TO, copy.value().memory}});
      !s.is_ok())
    return s;
  copy_data = static_cast<const float*>(copy.value().data);
  return copy.value().memory;
}

// `channel`: mean and variance (the batch's in a training fwd, written;
// the saved mean and a variance made from the saved invstd in a training
// bwd; else the running statistics), scale and shift (the caller's, or ones
// and zeros).  `gradients`: a backward's parameter gradients.
Status OnednnBatchnormKernel::add_channel_args(Args& channel, Args& gradients) {
  Result<dnnl_memory_t> mean = Status::ok(), variance = Status::ok();
  if (!training_) {
    mean = main_.operand_memory(OnednnOperand::running_mean, channel_md_);
    variance = main_.operand_memory(OnednnOperand::running_var, channel_md_);
  } else {
    mean = forward() ? owned_channels(0, mean_)
                     : main_.operand_memory(OnednnOperand::mean, channel_md_);
    variance = owned_channels(0, variance_);
  }
  for (const Status& s : {mean.status(), variance.status()})
    if (!s.is_ok()) return s;
  channel.push_back({DNNL_ARG_MEAN, mean.value()});
  channel.push_back({DNNL_ARG_VARIANCE, variance.value()});
  struct Parameter {
    bool used, given;
    OnednnOperand operand;
    float fill;
    int arg, grad_arg;
  };
  const Parameter parameters[] = {
      {use_scale(), d_.has_norm_flag(kNormScale), OnednnOperand::scale, 1.0f, DNNL_ARG_SCALE,
       DNNL_ARG_DIFF_SCALE},
      {use_shift(), d_.has_norm_flag(kNormShift), OnednnOperand::shift, 0.0f, DNNL_ARG_SHIFT,
       DNNL_ARG_DIFF_SHIFT},
  };
  float* unread = nullptr;  // constants, and oneDNN's gradients (parameter_gradients says why)
  for (const Parameter& p : parameters) {
    if (!p.used) continue;
    auto value =
        p.given ? main_.operand_memory(p.operand, channel_md_) : owned_channels(p.fill, unread);
    if (!value.is_ok()) return value.status();
    channel.push_back({p.arg, value.value()});
    if (forward()) continue;
    auto grad = owned_channels(0, unread);
    if (!grad.is_ok()) return grad.status();
    gradients.push_back({p.grad_arg, grad.value()});
  }
  return Status::ok();
}

// Normalise x into the result, then the activation in place.
Status OnednnBatchnormKernel::add_forward(dnnl_memory_t x, const Args& channel, std::string& note) {
  auto pd = batchnorm_forward_pd(data_md_, epsilon_, dnnl_forward_inference, flags());
  auto result = main_.operand_memory(OnednnOperand::result, data_md_);
  for (const Status& s : {pd.status(), result.status()})
    if (!s.is_ok()) return s;
  Args args{{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, result.value()}};
  args.insert(args.end(), channel.begin(), channel.end());
  if (Status s = main_.add_step(pd.value().get(), std::move(args)); !s.is_ok()) return s;
  note = implementation_name(pd.value().get());
  if (d_.activation == Activation::identity) return Status::ok();
  auto activation = eltwise_activation(d_.activation);
  if (!activation.is_ok()) return activation.status();
  auto eltwise =
      eltwise_forward_pd(data_md_, activation.value().algorithm, activation.value().alpha);
  if (!eltwise.is_ok()) return eltwise.status();
  return main_.add_step(eltwise.value().get(),
                        {{DNNL_ARG_SRC, result.value()}, {DNNL_ARG_DST, result.value()}});
}

// dy through the activation's slope at the pre-activation, which a forward
// on the saved (or running) statistics recomputes from x.
Result<dnnl_memory_t> OnednnBatchnormKernel::add_activation_gradient(dnnl_memory_t x,
                                                                     dnnl_memory_t dy,
                                                                     const Args& channel) {
  auto activation = eltwise_activation(d_.activation);
  if (!activation.is_ok()) return activation.status();
  auto normalize = batchnorm_forward_pd(data_md_, epsilon_, dnnl_forward_inference,
                                        flags() | dnnl_use_global_stats);
  auto slope =
      eltwise_backward_pd(data_md_, activation.value().algorithm, activation.value().alpha);
  auto z = main_.owned_memory(data_md_, "the recomputed pre-activation");
  auto g = main_.owned_memory(data_md_, "dy through the activation's slope");
  for (const Status& s : {normalize.status(), slope.status(), z.status(), g.status()})
    if (!s.is_ok()) return s;
  dy32_ = static_cast<const float*>(g.value().data);
  Args args{{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, z.value().memory}};
  args.insert(args.end(), channel.begin(), channel.end());
  if (Status s = main_.add_step(normalize.value().get(), std::move(args)); !s.is_ok()) return s;
  if (Status s = main_.add_step(slope.value().get(), {{DNNL_ARG_SRC, z.value().memory},
                                                      {DNNL_ARG_DIFF_DST, dy},
                                                      {DNNL_ARG_DIFF_SRC, g.value().memory}});
      !s.is_ok())
    return s;
  return g.value().memory;
}

Status OnednnBatchnormKernel::add_backward(const OnednnProblem& p, dnnl_memory_t x,
                                           const Args& channel, const Args& gradients,
                                           std::string& note) {
  auto dy = f32_input(OnednnOperand::dy, p.y, p.x, "dy in f32", dy32_);
  if (dy.is_ok() && d_.activation != Activation::identity)
    dy = add_activation_gradient(x, dy.value(), channel);
  auto pd = batchnorm_backward_pd(data_md_, epsilon_, flags());
  auto result = main_.operand_memory(OnednnOperand::result, data_md_);
  for (const Status& s : {dy.status(), pd.status(), result.status()})
    if (!s.is_ok()) return s;
  Args args{
      {DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, dy.value()}, {DNNL_ARG_DIFF_SRC, result.value()}};
  args.insert(args.end(), channel.begin(), channel.end());
  args.insert(args.end(), gradients.begin(), gradients.end());
  note = implementation_name(pd.value().get());
  return main_.add_step(pd.value().get(), std::move(args));
}

// The result reordered into the caller's output (its layout and type).
Status OnednnBatchnormKernel::add_tail(const OnednnProblem& p) {
  if (!writes_output()) return Status::ok();
  auto output_md = strided_md(forward() ? p.y : p.x, d_.dtype);
  if (!output_md.is_ok()) return output_md.status();
  auto from = tail_.borrowed_memory(data_md_, result_.data());
  auto to = tail_.operand_memory(OnednnOperand::result, output_md.value());
  auto reorder = reorder_pd(data_md_, output_md.value());
  for (const Status& s : {from.status(), to.status(), reorder.status()})
    if (!s.is_ok()) return s;
  return tail_.add_step(reorder.value().get(),
                        {{DNNL_ARG_FROM, from.value()}, {DNNL_ARG_TO, to.value()}});
}

Status OnednnBatchnormKernel::assemble(const OnednnProblem& p, std::string& note) {
  auto data = strided_md(p.x, DataType::f32);
  auto channels = strided_md(OnednnTensor{1, {x_.dims[1]}, {1}}, DataType::f32);
  for (const Status& s : {data.status(), channels.status()})
    if (!s.is_ok()) return s;
  data_md_ = data.value(), channel_md_ = channels.value();
  if (forward() && training_) statistics_.emplace(d_);
  if (d_.has_norm_flag(kNormGradScale) || d_.has_norm_flag(kNormGradShift)) {
    gradient_sums_.emplace(x_);
    means_.resize(static_cast<std::size_t>(x_.dims[1]));
  }
  auto result = HostBuffer::allocate(onednn().api().memory_desc_get_size(&data_md_),
                                     "the f32 result before the output's layout and type");
  if (!result.is_ok()) return result.status();
  result_ = std::move(result).value();
  auto x = f32_input(OnednnOperand::x, p.x, p.x, "x in f32", x32_);
  if (!x.is_ok()) return x.status();
  Args channel, gradients;
  if (Status s = add_channel_args(channel, gradients); !s.is_ok()) return s;
  const Status body = forward() ? add_forward(x.value(), channel, note)
                                : add_backward(p, x.value(), channel, gradients, note);
  if (!body.is_ok()) return body;
  return add_tail(p);
}

// A training forward's statistics: for oneDNN before it runs, then saved,
// and the running update.
void OnednnBatchnormKernel::batch_statistics(const ExecArgs& args) const {
  statistics_->compute(args.x);
  for (std::int64_t c = 0; c < x_.dims[1]; ++c) {
    mean_[c] = static_cast<float>(statistics_->mean(c));
    variance_[c] = static_cast<float>(statistics_->variance(c));
  }
}

void OnednnBatchnormKernel::finish_statistics(const ExecArgs& args) const {
  const NormOperands& n = args.norm;
  for (std::int64_t c = 0; c < x_.dims[1]; ++c) {
    const double mean = statistics_->mean(c), variance = statistics_->variance(c);
    if (n.mean != nullptr) static_cast<float*>(n.mean)[c] = static_cast<float>(mean);
    if (n.invstd != nullptr)
      static_cast<float*>(n.invstd)[c] =
          static_cast<float>(1.0 / std::sqrt(variance + d_.norm_epsilon()));
    reference::update_running_statistics<float>(d_, n, c, count_, mean, variance);
  }
}

// dscale = sum g x^ = invstd sum g (x - mean) and dshift = sum g over each
// channel, g the f32 dy (through the activation) oneDNN read, accumulated
// in f64 (ChannelSums): oneDNN's f32 sums lose up to 3x f32 torch's
// accuracy on YOLO11n's first layer (51200 values per channel, which cancel).
void OnednnBatchnormKernel::parameter_gradients(const ExecArgs& args) const {
  if (!gradient_sums_) return;
  const NormOperands& norm = args.norm;
  const auto at = [](const void* p, std::int64_t c) {
    return static_cast<double>(static_cast<const float*>(p)[c]);
  };
  const std::int64_t channels = x_.dims[1];
  for (std::int64_t c = 0; c < channels; ++c)
    means_[static_cast<std::size_t>(c)] = at(training_ ? norm.mean : norm.running_mean, c);
  const void* x = x32_ != nullptr ? x32_ : args.x;
  const auto* g = dy32_ != nullptr ? dy32_ : static_cast<const float*>(args.dy);
  gradient_sums_->compute(DataType::f32, x, g, means_.data());
  for (std::int64_t c = 0; c < channels; ++c) {
    const double invstd = training_ ? at(norm.invstd, c)
                                    : 1.0 / std::sqrt(at(norm.running_var, c) + d_.norm_epsilon());
    if (d_.has_norm_flag(kNormGradScale))
      static_cast<float*>(norm.scale_grad)[c] =
          static_cast<float>(invstd * gradient_sums_->second(c));
    if (d_.has_norm_flag(kNormGradShift))
      static_cast<float*>(norm.shift_grad)[c] = static_cast<float>(gradient_sums_->first(c));
  }
}

// out = alpha r + beta out from the f32 result r (activated), as the
// reference stores it.
void OnednnBatchnormKernel::store_blended(const ExecArgs& args) const {
  const auto* r = static_cast<const float*>(result_.data());
  const View5& out = forward() ? y_ : x_;
  const std::int64_t planes = x_.dims[0] * x_.dims[1];
  reference::dispatch_dtype(d_.dtype, [&]<class T>() {
    using Acc = typename reference::Element<T>::Acc;
    T* o = static_cast<T*>(args.out);
#pragma omp parallel for if (reference::worth_parallel(planes * x_.spatial_size()))
    for (std::int64_t nc = 0; nc < planes; ++nc) {
      const std::int64_t n = nc / x_.dims[1], c = nc % x_.dims[1];
      for (std::int64_t i = 0; i < x_.dims[2]; ++i)
        for (std::int64_t j = 0; j < x_.dims[3]; ++j)
          for (std::int64_t k = 0; k < x_.dims[4]; ++k)
            reference::scale_store(o[out.offset(n, c, i, j, k)],
                                   static_cast<Acc>(r[x_.offset(n, c, i, j, k)]), args.alpha,
                                   args.beta);
    }
  });
}

Status OnednnBatchnormKernel::execute(const ExecArgs& args) const {
  const std::lock_guard lock(mutex_);
  if (!forward() && training_)
    for (std::int64_t c = 0; c < x_.dims[1]; ++c) {
      const double invstd = static_cast<const float*>(args.norm.invstd)[c];
      variance_[c] = static_cast<float>(1.0 / (invstd * invstd) - d_.norm_epsilon());
    }
  if (forward() && training_) batch_statistics(args);
  const bool plain = args.alpha == 1.0 && args.beta == 0.0;
  const bool direct =
      writes_output() && plain && d_.dtype == DataType::f32 && (same_layout_ || !forward());
  if (Status s = main_.run(args, direct ? args.out : result_.data()); !s.is_ok()) return s;
  if (forward() && training_) finish_statistics(args);
  if (!forward()) parameter_gradients(args);
  if (!writes_output() || direct) return Status::ok();
  if (plain) return tail_.run(args, args.out);
  store_blended(args);
  return Status::ok();
}

}  // namespace

Result<std::unique_ptr<Kernel>> build_onednn_batchnorm(const OpDescriptor& desc,
                                                       const OnednnProblem& problem,
                                                       std::string& note) {
  auto main = onednn_cpu_stream();
  auto tail = onednn_cpu_stream();
  for (const Status& s : {main.status(), tail.status()})
    if (!s.is_ok()) return s;
  auto kernel = std::make_unique<OnednnBatchnormKernel>(desc, problem, std::move(main).value(),
                                                        std::move(tail).value());
  if (Status s = kernel->assemble(problem, note); !s.is_ok()) return s;
  return std::unique_ptr<Kernel>(std::move(kernel));
}

}  // namespace convjit
