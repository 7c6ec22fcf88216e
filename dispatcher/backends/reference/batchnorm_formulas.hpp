// The per-channel arithmetic every host batchnorm shares (the reference's
// and the onednn backend's, which keeps statistics oneDNN does not): the
// running update of PyTorch or ONNX, and the fused activation's slope.
#pragma once

#include <cmath>
#include <cstdint>

#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/exec_args.hpp"

namespace convjit::reference {

// d act(v) / dv, as PyTorch's threshold_backward and silu_backward.
[[nodiscard]] inline double activation_slope(Activation activation, double v) {
  switch (activation) {
    case Activation::relu:
      return v > 0 ? 1.0 : 0.0;
    case Activation::silu: {
      const double s = 1.0 / (1.0 + std::exp(-v));
      return s * (1.0 + v * (1.0 - s));
    }
    default:
      return 1.0;
  }
}

// Channel c's running statistics (of type P, when the caller passed them)
// moved towards the batch's mean and biased variance over `count` values:
// PyTorch's running = (1 - m) running + m batch with the unbiased variance,
// or ONNX's running = m running + (1 - m) batch with the population one.
template <class P>
void update_running_statistics(const OpDescriptor& d, const NormOperands& norm, std::int64_t c,
                               std::int64_t count, double mean, double biased_var) {
  if (norm.running_mean == nullptr) return;
  const double n = static_cast<double>(count);
  const double m = norm.momentum;
  const bool onnx = d.has_norm_flag(kNormOnnxRunningStats);
  const double keep = onnx ? m : 1.0 - m;
  const double batch_var = onnx ? biased_var : biased_var * n / (n - 1.0);
  P& running_mean = static_cast<P*>(norm.running_mean)[c];
  P& running_var = static_cast<P*>(norm.running_var)[c];
  running_mean = static_cast<P>(keep * running_mean + (1.0 - keep) * mean);
  running_var = static_cast<P>(keep * running_var + (1.0 - keep) * batch_var);
}

}  // namespace convjit::reference
