// Test helper: a host tensor with any layout (NCHW, NHWC, or a halo buffer
// whose data pointer sits inside a larger padded allocation), typed storage
// and logical-order access in f64.
#pragma once

#include <array>
#include <cstdint>
#include <random>
#include <vector>

#include "convjit/convjit.hpp"
#include "dispatcher/descriptor/half_precision.hpp"

namespace convjit::test {

enum class TestLayout { nchw, nhwc, halo };

inline const char* layout_name(TestLayout layout) {
  switch (layout) {
    case TestLayout::nchw:
      return "nchw";
    case TestLayout::nhwc:
      return "nhwc";
    case TestLayout::halo:
      return "halo";
  }
  return "?";
}

template <class T>
double to_double(T v) {
  return static_cast<double>(v);
}
template <>
inline double to_double(Half v) {
  return half_to_float(v);
}
template <>
inline double to_double(BFloat16 v) {
  return bf16_to_float(v);
}
template <class T>
T from_double(double v) {
  return static_cast<T>(v);
}
template <>
inline Half from_double(double v) {
  return float_to_half(static_cast<float>(v));
}
template <>
inline BFloat16 from_double(double v) {
  return float_to_bf16(static_cast<float>(v));
}

template <class T>
constexpr convjit_dtype_t dtype_of();
template <>
constexpr convjit_dtype_t dtype_of<float>() {
  return CONVJIT_DTYPE_F32;
}
template <>
constexpr convjit_dtype_t dtype_of<double>() {
  return CONVJIT_DTYPE_F64;
}
template <>
constexpr convjit_dtype_t dtype_of<Half>() {
  return CONVJIT_DTYPE_F16;
}
template <>
constexpr convjit_dtype_t dtype_of<BFloat16>() {
  return CONVJIT_DTYPE_BF16;
}

template <class T>
class HostTensor {
 public:
  HostTensor() = default;

  // Logical dims N, C, spatial...; a halo layout pads every spatial dim by
  // `halo` on both sides and the channel stride by a further 3 elements.
  HostTensor(std::vector<std::int64_t> dims, TestLayout layout, std::int64_t halo = 2)
      : dims_(std::move(dims)) {
    desc_.dtype = dtype_of<T>();
    desc_.rank = static_cast<int>(dims_.size());
    for (int i = 0; i < desc_.rank; ++i) desc_.dims[i] = dims_[static_cast<std::size_t>(i)];
    if (layout == TestLayout::halo) {
      make_halo_strides(halo);
    } else {
      std::array<std::int64_t, 5> d{};
      for (int i = 0; i < desc_.rank; ++i) d[static_cast<std::size_t>(i)] = desc_.dims[i];
      (void)convjit_tensor_desc_init(
          &desc_, desc_.dtype, desc_.rank, d.data(),
          layout == TestLayout::nhwc ? CONVJIT_LAYOUT_NHWC : CONVJIT_LAYOUT_NCHW);
    }
    std::int64_t last = 0;
    for (int i = 0; i < desc_.rank; ++i) last += (desc_.dims[i] - 1) * desc_.strides[i];
    storage_.assign(static_cast<std::size_t>(base_ + last + 1 + base_), from_double<T>(0));
  }

  const TensorDesc& desc() const { return desc_; }
  const std::vector<std::int64_t>& dims() const { return dims_; }
  T* data() { return storage_.data() + base_; }
  const T* data() const { return storage_.data() + base_; }
  std::vector<T>& storage() { return storage_; }

  std::int64_t count() const {
    std::int64_t n = 1;
    for (auto d : dims_) n *= d;
    return n;
  }

  // Offset of the i-th element in logical (row-major N, C, spatial) order.
  std::int64_t offset_of(std::int64_t logical) const {
    std::int64_t offset = 0;
    for (int i = desc_.rank - 1; i >= 0; --i) {
      offset += (logical % desc_.dims[i]) * desc_.strides[i];
      logical /= desc_.dims[i];
    }
    return offset;
  }

  double get(std::int64_t logical) const { return to_double(data()[offset_of(logical)]); }
  void set(std::int64_t logical, double v) { data()[offset_of(logical)] = from_double<T>(v); }

  std::vector<double> values() const {
    std::vector<double> v(static_cast<std::size_t>(count()));
    for (std::int64_t i = 0; i < count(); ++i) v[static_cast<std::size_t>(i)] = get(i);
    return v;
  }

  void fill_random(std::mt19937& rng, double lo = -1.0, double hi = 1.0) {
    std::uniform_real_distribution<double> dist(lo, hi);
    for (auto& e : storage_) e = from_double<T>(dist(rng));  // halo too: must not be read
  }
  void fill(double v) {
    for (auto& e : storage_) e = from_double<T>(v);
  }

 private:
  void make_halo_strides(std::int64_t halo) {
    std::int64_t stride = 1;
    base_ = 0;
    for (int i = desc_.rank - 1; i >= 0; --i) {
      desc_.strides[i] = stride;
      const std::int64_t pad = i >= 2 ? halo : (i == 1 ? 3 : 0);
      if (i >= 2) base_ += halo * stride;
      stride *= desc_.dims[i] + (i >= 2 ? 2 * pad : pad);
    }
  }

  std::vector<std::int64_t> dims_;
  TensorDesc desc_;
  std::int64_t base_ = 0;
  std::vector<T> storage_;
};

template <class A, class B>
double dot(const HostTensor<A>& a, const HostTensor<B>& b) {
  double sum = 0;
  for (std::int64_t i = 0; i < a.count(); ++i) sum += a.get(i) * b.get(i);
  return sum;
}

}  // namespace convjit::test
