#include "dispatcher/backends/onednn/max_pool_nan_guard.hpp"

#include <cmath>
#include <cstdint>

#include "dispatcher/backends/reference/dtype_dispatch.hpp"
#include "dispatcher/backends/reference/tensor_view.hpp"

namespace convjit {

bool needs_max_pool_nan_guard(const OpDescriptor& desc) {
  return desc.is_pool() && desc.pool_mode == PoolingMode::max;
}

namespace {

// NaN: all exponent bits set and a nonzero mantissa, i.e. the magnitude's
// bits above those of infinity.  On raw bits, so the loop vectorises.
template <class Bits>
bool any_nan_bits(const Bits* data, std::int64_t count, Bits magnitude_mask, Bits infinity) {
  bool found = false;
#pragma omp parallel for simd reduction(|| : found) if (count >= (std::int64_t{1} << 20))
  for (std::int64_t i = 0; i < count; ++i) found = found || (data[i] & magnitude_mask) > infinity;
  return found;
}

bool dense_has_nan(DataType dtype, const void* x, std::int64_t count) {
  switch (dtype) {
    case DataType::f32:
      return any_nan_bits(static_cast<const std::uint32_t*>(x), count, 0x7fffffffu, 0x7f800000u);
    case DataType::bf16:
      return any_nan_bits<std::uint16_t>(static_cast<const std::uint16_t*>(x), count, 0x7fff,
                                         0x7f80);
    case DataType::f16:
      return any_nan_bits<std::uint16_t>(static_cast<const std::uint16_t*>(x), count, 0x7fff,
                                         0x7c00);
    case DataType::f64:
      break;
  }
  return any_nan_bits<std::uint64_t>(static_cast<const std::uint64_t*>(x), count,
                                     0x7fffffffffffffffull, 0x7ff0000000000000ull);
}

// Strided x: element by element through its view.
bool strided_has_nan(const OpDescriptor& desc, const View5& v, const void* x) {
  bool found = false;
  reference::dispatch_dtype(desc.dtype, [&]<class T>() {
    const T* data = static_cast<const T*>(x);
    const std::int64_t planes = v.dims[0] * v.dims[1];
    const bool parallel = reference::worth_parallel(planes * v.spatial_size());
#pragma omp parallel for reduction(|| : found) if (parallel)
    for (std::int64_t nc = 0; nc < planes; ++nc) {
      const std::int64_t n = nc / v.dims[1], c = nc % v.dims[1];
      for (std::int64_t d = 0; d < v.dims[2]; ++d)
        for (std::int64_t h = 0; h < v.dims[3]; ++h)
          for (std::int64_t w = 0; w < v.dims[4]; ++w)
            found = found || std::isnan(reference::Element<T>::load(data[v.offset(n, c, d, h, w)]));
    }
  });
  return found;
}

}  // namespace

bool input_has_nan(const OpDescriptor& desc, const void* x) {
  const View5 v = canonical_view(desc.x_dims, desc.x_strides, desc.spatial_dims);
  std::int64_t count = 1, span = 1;
  for (std::size_t i = 0; i < 5; ++i) count *= v.dims[i], span += (v.dims[i] - 1) * v.strides[i];
  // A packed tensor (NCHW, NHWC, any permutation) is one run of `count` elements.
  return span == count ? dense_has_nan(desc.dtype, x, count) : strided_has_nan(desc, v, x);
}

}  // namespace convjit
