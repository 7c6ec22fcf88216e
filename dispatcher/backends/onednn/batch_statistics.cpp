#include "dispatcher/backends/onednn/batch_statistics.hpp"

#include <algorithm>

#include "dispatcher/backends/reference/dtype_dispatch.hpp"
#include "dispatcher/backends/reference/tensor_view.hpp"

namespace convjit {

namespace {

// Enough slices for any host's threads to share, few enough that adding
// their partial sums costs nothing.
constexpr std::int64_t kSlices = 32;

}  // namespace

BatchStatistics::BatchStatistics(const OpDescriptor& desc)
    : dtype_(desc.dtype),
      x_(canonical_view(desc.x_dims, desc.x_strides, desc.spatial_dims)),
      pixels_(x_.dims[0] * x_.spatial_size()) {
  const auto channels = static_cast<std::size_t>(x_.dims[1]);
  shift_.resize(channels);
  sums_.resize(channels * kSlices);
  squares_.resize(channels * kSlices);
  mean_.resize(channels);
  variance_.resize(channels);
}

// Slice `slice`'s pixels, each pixel's channels in turn (contiguous in a
// channels-last layout; planes apart, but each line reused by the next
// pixels, in a channel-planes one).
template <class T>
void BatchStatistics::sum_slice(const T* x, std::int64_t slice) {
  using reference::Element;
  const std::int64_t channels = x_.dims[1], spatial = x_.spatial_size();
  const std::int64_t begin = pixels_ * slice / kSlices, end = pixels_ * (slice + 1) / kSlices;
  double* sums = sums_.data() + slice * channels;
  double* squares = squares_.data() + slice * channels;
  std::fill_n(sums, channels, 0.0);
  std::fill_n(squares, channels, 0.0);
  for (std::int64_t p = begin; p < end; ++p) {
    const std::int64_t n = p / spatial, s = p % spatial;
    const std::int64_t w = s % x_.dims[4], h = s / x_.dims[4] % x_.dims[3],
                       d = s / (x_.dims[4] * x_.dims[3]);
    const T* pixel = x + x_.offset(n, 0, d, h, w);
    for (std::int64_t c = 0; c < channels; ++c) {
      const double v = static_cast<double>(Element<T>::load(pixel[c * x_.strides[1]])) - shift_[c];
      sums[c] += v;
      squares[c] += v * v;
    }
  }
}

void BatchStatistics::compute(const void* x) {
  const std::int64_t channels = x_.dims[1];
  reference::dispatch_dtype(dtype_, [&]<class T>() {
    const T* values = static_cast<const T*>(x);
    for (std::int64_t c = 0; c < channels; ++c)
      shift_[static_cast<std::size_t>(c)] =
          static_cast<double>(reference::Element<T>::load(values[c * x_.strides[1]]));
#pragma omp parallel for schedule(static) if (reference::worth_parallel(pixels_ * channels))
    for (std::int64_t slice = 0; slice < kSlices; ++slice) sum_slice(values, slice);
  });
  const auto count = static_cast<double>(pixels_);
  for (std::int64_t c = 0; c < channels; ++c) {
    double sum = 0, square = 0;
    for (std::int64_t slice = 0; slice < kSlices; ++slice) {
      sum += sums_[static_cast<std::size_t>(slice * channels + c)];
      square += squares_[static_cast<std::size_t>(slice * channels + c)];
    }
    const double shifted_mean = sum / count;
    const auto i = static_cast<std::size_t>(c);
    mean_[i] = shift_[i] + shifted_mean;
    const double variance = square / count - shifted_mean * shifted_mean;
    variance_[i] = variance < 0 ? 0 : variance;  // NaN stays NaN
  }
}

}  // namespace convjit
