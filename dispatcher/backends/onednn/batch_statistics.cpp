#include "dispatcher/backends/onednn/batch_statistics.hpp"

#include "dispatcher/backends/reference/dtype_dispatch.hpp"
#include "dispatcher/backends/reference/tensor_view.hpp"

namespace convjit {

BatchStatistics::BatchStatistics(const OpDescriptor& desc)
    : dtype_(desc.dtype),
      x_(canonical_view(desc.x_dims, desc.x_strides, desc.spatial_dims)),
      shift_(static_cast<std::size_t>(x_.dims[1])),
      sums_(x_),
      mean_(static_cast<std::size_t>(x_.dims[1])),
      variance_(static_cast<std::size_t>(x_.dims[1])) {}

void BatchStatistics::compute(const void* x) {
  const std::int64_t channels = x_.dims[1];
  reference::dispatch_dtype(dtype_, [&]<class T>() {
    const T* values = static_cast<const T*>(x);
    for (std::int64_t c = 0; c < channels; ++c)
      shift_[static_cast<std::size_t>(c)] =
          static_cast<double>(reference::Element<T>::load(values[c * x_.strides[1]]));
  });
  sums_.compute(dtype_, x, nullptr, shift_.data());
  const auto count = static_cast<double>(sums_.pixels());
  for (std::int64_t c = 0; c < channels; ++c) {
    const double shifted_mean = sums_.first(c) / count;
    const auto i = static_cast<std::size_t>(c);
    mean_[i] = shift_[i] + shifted_mean;
    const double variance = sums_.second(c) / count - shifted_mean * shifted_mean;
    variance_[i] = variance < 0 ? 0 : variance;  // NaN stays NaN
  }
}

}  // namespace convjit
