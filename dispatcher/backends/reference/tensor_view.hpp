// Host-side helpers shared by the reference kernels: element access in
// each dtype, scaling, and tap ranges over the canonical 5D layout.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "dispatcher/descriptor/canonical_layout.hpp"
#include "dispatcher/descriptor/half_precision.hpp"
#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit::reference {

using convjit::canonical_view;
using convjit::canonical_window;
using convjit::View5;
using convjit::Window3;

// Taps t in [begin, end) of one window dim whose input index
// o*stride - pad_begin + t*dilation lies inside [0, input).
struct TapRange {
  std::int64_t begin;
  std::int64_t end;
};
TapRange valid_taps(std::int64_t out_index, std::int64_t input, std::int64_t taps,
                    std::int64_t pad_begin, std::int64_t stride, std::int64_t dilation);

// Whether an op of `work` multiply-adds is worth an OpenMP team: waking
// threads costs microseconds, which dominates small problems.
inline bool worth_parallel(std::int64_t work) { return work >= (std::int64_t{1} << 16); }

// Storage type -> accumulation type, and conversions between them.  f32 is
// accumulated in double so the reference is more exact than the kernels it
// judges; f16 and bf16 accumulate in f32 as the GPU kernels do.
template <class T>
struct Element;
template <>
struct Element<float> {
  using Acc = double;
  static Acc load(float v) { return v; }
  static float store(Acc v) { return static_cast<float>(v); }
};
template <>
struct Element<double> {
  using Acc = double;
  static Acc load(double v) { return v; }
  static double store(Acc v) { return v; }
};
template <>
struct Element<Half> {
  using Acc = float;
  static Acc load(Half v) { return half_to_float(v); }
  static Half store(Acc v) { return float_to_half(v); }
};
template <>
struct Element<BFloat16> {
  using Acc = float;
  static Acc load(BFloat16 v) { return bf16_to_float(v); }
  static BFloat16 store(Acc v) { return float_to_bf16(v); }
};

// out = alpha * value + beta * out, never reading out when beta == 0.
template <class T>
void scale_store(T& out, typename Element<T>::Acc value, double alpha, double beta) {
  using Acc = typename Element<T>::Acc;
  Acc result = static_cast<Acc>(alpha) * value;
  if (beta != 0.0) result += static_cast<Acc>(beta) * Element<T>::load(out);
  out = Element<T>::store(result);
}

// Writes an accumulated dense (n, c) plane into the strided tensor `view`.
template <class T, class Acc>
void store_plane(const std::vector<Acc>& plane, const View5& view, T* out, std::int64_t n,
                 std::int64_t c, double alpha, double beta) {
  for (std::int64_t d = 0; d < view.dims[2]; ++d)
    for (std::int64_t h = 0; h < view.dims[3]; ++h)
      for (std::int64_t w = 0; w < view.dims[4]; ++w)
        scale_store(out[view.offset(n, c, d, h, w)],
                    static_cast<typename Element<T>::Acc>(plane[view.plane_index(d, h, w)]), alpha,
                    beta);
}

}  // namespace convjit::reference
