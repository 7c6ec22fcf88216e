#include "dispatcher/backends/reference/batchnorm_reference.hpp"

#include <cmath>

#include "dispatcher/backends/reference/batchnorm_formulas.hpp"
#include "dispatcher/backends/reference/dtype_dispatch.hpp"
#include "dispatcher/backends/reference/epilogue_reference.hpp"
#include "dispatcher/backends/reference/tensor_view.hpp"

namespace convjit::reference {

namespace {

// One channel's statistics: the values it normalises with.
struct ChannelStats {
  double mean = 0;
  double invstd = 0;
  double scale = 1;
  double shift = 0;
};

template <class T, class P>
class BatchNormReference {
 public:
  BatchNormReference(const OpDescriptor& d, const ExecArgs& args)
      : d_(d),
        args_(args),
        norm_(args.norm),
        epsilon_(d.norm_epsilon()),
        x_(canonical_view(d.x_dims, d.x_strides, d.spatial_dims)),
        y_(canonical_view(d.y_dims, d.y_strides, d.spatial_dims)),
        count_(x_.dims[0] * x_.spatial_size()) {}

  void run() const {
    const bool parallel = worth_parallel(x_.dims[0] * x_.dims[1] * x_.spatial_size());
#pragma omp parallel for schedule(dynamic) if (parallel)
    for (std::int64_t c = 0; c < x_.dims[1]; ++c) {
      if (d_.direction == Direction::fwd) {
        forward(c);
      } else {
        backward(c);
      }
    }
  }

 private:
  static double load(const T& v) { return static_cast<double>(Element<T>::load(v)); }
  static double param(const void* p, std::int64_t c) { return static_cast<const P*>(p)[c]; }
  static void set_param(void* p, std::int64_t c, double v) {
    if (p != nullptr) static_cast<P*>(p)[c] = static_cast<P>(v);
  }

  template <class F>
  void for_each(std::int64_t c, F&& f) const {
    for (std::int64_t n = 0; n < x_.dims[0]; ++n)
      for (std::int64_t i = 0; i < x_.dims[2]; ++i)
        for (std::int64_t j = 0; j < x_.dims[3]; ++j)
          for (std::int64_t k = 0; k < x_.dims[4]; ++k)
            f(x_.offset(n, c, i, j, k), y_.offset(n, c, i, j, k));
  }

  ChannelStats parameters(std::int64_t c) const {
    ChannelStats s;
    if (d_.has_norm_flag(kNormScale)) s.scale = param(norm_.scale, c);
    if (d_.has_norm_flag(kNormShift)) s.shift = param(norm_.shift, c);
    return s;
  }

  // The batch's mean and biased variance, the variance over the mean.
  std::pair<double, double> batch_moments(std::int64_t c) const {
    const T* x = static_cast<const T*>(args_.x);
    double sum = 0, squares = 0;
    for_each(c, [&](std::int64_t at, std::int64_t) { sum += load(x[at]); });
    const double mean = sum / static_cast<double>(count_);
    for_each(c, [&](std::int64_t at, std::int64_t) {
      const double v = load(x[at]) - mean;
      squares += v * v;
    });
    return {mean, squares / static_cast<double>(count_)};
  }

  ChannelStats inference_stats(std::int64_t c) const {
    ChannelStats s = parameters(c);
    s.mean = param(norm_.running_mean, c);
    s.invstd = 1.0 / std::sqrt(param(norm_.running_var, c) + epsilon_);
    return s;
  }

  void forward(std::int64_t c) const {
    ChannelStats s;
    if (d_.has_norm_flag(kNormInference)) {
      s = inference_stats(c);
    } else {
      s = parameters(c);
      const auto [mean, var] = batch_moments(c);
      s.mean = mean;
      s.invstd = 1.0 / std::sqrt(var + epsilon_);
      set_param(norm_.mean, c, mean);
      set_param(norm_.invstd, c, s.invstd);
      update_running_statistics<P>(d_, norm_, c, count_, mean, var);
    }
    const T* x = static_cast<const T*>(args_.x);
    T* y = static_cast<T*>(args_.out);
    for_each(c, [&](std::int64_t xi, std::int64_t yi) {
      const double v = (load(x[xi]) - s.mean) * s.invstd * s.scale + s.shift;
      scale_store(y[yi], static_cast<typename Element<T>::Acc>(activate(d_.activation, v)),
                  args_.alpha, args_.beta);
    });
  }

  // dy through the activation's derivative at the recomputed forward.
  double gradient(double dy, double normalized, const ChannelStats& s) const {
    if (d_.activation == Activation::identity) return dy;
    return dy * activation_slope(d_.activation, normalized * s.scale + s.shift);
  }

  void backward(std::int64_t c) const {
    ChannelStats s = parameters(c);
    const bool training = !d_.has_norm_flag(kNormInference);
    if (training) {
      s.mean = param(norm_.mean, c);
      s.invstd = param(norm_.invstd, c);
    } else {
      s = inference_stats(c);
    }
    const T* x = static_cast<const T*>(args_.x);
    const T* dy = static_cast<const T*>(args_.dy);
    double sum_g = 0, sum_gx = 0;
    for_each(c, [&](std::int64_t xi, std::int64_t yi) {
      const double normalized = (load(x[xi]) - s.mean) * s.invstd;
      const double g = gradient(load(dy[yi]), normalized, s);
      sum_g += g;
      sum_gx += g * normalized;
    });
    if (d_.has_norm_flag(kNormGradScale)) set_param(norm_.scale_grad, c, sum_gx);
    if (d_.has_norm_flag(kNormGradShift)) set_param(norm_.shift_grad, c, sum_g);
    if (!d_.has_norm_flag(kNormGradInput)) return;
    const double n = static_cast<double>(count_);
    const double mean_g = training ? sum_g / n : 0.0, mean_gx = training ? sum_gx / n : 0.0;
    T* dx = static_cast<T*>(args_.out);
    for_each(c, [&](std::int64_t xi, std::int64_t yi) {
      const double normalized = (load(x[xi]) - s.mean) * s.invstd;
      const double g = gradient(load(dy[yi]), normalized, s);
      const double v = s.scale * s.invstd * (g - mean_g - normalized * mean_gx);
      scale_store(dx[xi], static_cast<typename Element<T>::Acc>(v), args_.alpha, args_.beta);
    });
  }

  const OpDescriptor& d_;
  const ExecArgs& args_;
  const NormOperands& norm_;
  double epsilon_;
  View5 x_, y_;
  std::int64_t count_;  // values per channel
};

}  // namespace

void batchnorm_reference(const OpDescriptor& desc, const ExecArgs& args) {
  dispatch_dtype(desc.dtype, [&]<class T>() {
    if constexpr (std::is_same_v<T, double>) {
      BatchNormReference<T, double>(desc, args).run();
    } else {
      BatchNormReference<T, float>(desc, args).run();
    }
  });
}

}  // namespace convjit::reference
