// The host reference of a conv fwd's fused epilogue (op_descriptor.hpp):
//   y = act(alpha acc + bias[k] [+ residual]) + beta y
// in the accumulation type, so it judges the kernels' f32 epilogues.
#pragma once

#include <cmath>
#include <cstdint>

#include "dispatcher/backends/reference/tensor_view.hpp"
#include "dispatcher/exec_args.hpp"

namespace convjit::reference {

template <class Acc>
[[nodiscard]] Acc activate(Activation activation, Acc v) {
  switch (activation) {
    case Activation::relu:
      return v < Acc(0) ? Acc(0) : v;  // NaN stays NaN, as in PyTorch
    case Activation::silu:
      return v / (Acc(1) + std::exp(-v));
    case Activation::sigmoid:
      return Acc(1) / (Acc(1) + std::exp(-v));
    case Activation::identity:
      break;
  }
  return v;
}

// Stores one output element; `at` is its offset in y (and in the residual,
// which shares y's strides), `k` its filter.
template <class T>
class EpilogueStore {
  using Acc = typename Element<T>::Acc;

 public:
  EpilogueStore(const OpDescriptor& d, const ExecArgs& args)
      : activation_(d.activation),
        bias_(d.has_bias() ? static_cast<const T*>(args.bias) : nullptr),
        residual_(d.has_residual() ? static_cast<const T*>(args.residual) : nullptr),
        alpha_(args.alpha),
        beta_(args.beta) {}

  void operator()(T* y, std::int64_t at, std::int64_t k, Acc acc) const {
    Acc v = static_cast<Acc>(alpha_) * acc;
    if (bias_ != nullptr) v += Element<T>::load(bias_[k]);
    if (residual_ != nullptr) v += Element<T>::load(residual_[at]);
    v = activate(activation_, v);
    if (beta_ != 0.0) v += static_cast<Acc>(beta_) * Element<T>::load(y[at]);
    y[at] = Element<T>::store(v);
  }

 private:
  Activation activation_;
  const T* bias_;
  const T* residual_;
  double alpha_, beta_;
};

}  // namespace convjit::reference
