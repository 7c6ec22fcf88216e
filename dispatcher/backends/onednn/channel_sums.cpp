#include "dispatcher/backends/onednn/channel_sums.hpp"

#include <algorithm>

#include "dispatcher/backends/reference/dtype_dispatch.hpp"
#include "dispatcher/backends/reference/tensor_view.hpp"

namespace convjit {

namespace {

// Enough slices for any host's threads to share, few enough that adding
// their partial sums costs nothing.
constexpr std::int64_t kSlices = 32;
// Independent accumulators per run of pixels: the f64 additions' latency
// hidden, in a fixed order.
constexpr int kLanes = 4;

// Calls f(offset of the run's first pixel at channel 0, pixels in the run)
// for the runs along W that cover pixels [begin, end) of N x D x H x W.
template <class F>
void for_each_run(const View5& x, std::int64_t begin, std::int64_t end, F&& f) {
  const std::int64_t width = x.dims[4], rows = x.dims[2] * x.dims[3];
  std::int64_t row = begin / width, w = begin % width;  // row: (n, d, h) together
  for (std::int64_t p = begin; p < end; ++row, w = 0) {
    const std::int64_t n = row / rows, dh = row % rows;
    const std::int64_t length = std::min(width - w, end - p);
    f(x.offset(n, 0, dh / x.dims[3], dh % x.dims[3], w), length);
    p += length;
  }
}

// kLanes consecutive values into their lanes: w = u (kSquares) or g.
template <class T, bool kSquares>
inline void accumulate_block(const T* x, const float* g, double center, double* a, double* b) {
  for (int l = 0; l < kLanes; ++l) {
    const double u = static_cast<double>(reference::Element<T>::load(x[l])) - center;
    const double w = kSquares ? u : static_cast<double>(g[l]);
    a[l] += w;
    b[l] += w * u;
  }
}

}  // namespace

ChannelSums::ChannelSums(const View5& x)
    : x_(x), pixels_(x.dims[0] * x.spatial_size()) {
  const auto channels = static_cast<std::size_t>(x.dims[1]);
  first_partial_.resize(channels * kSlices);
  second_partial_.resize(channels * kSlices);
  first_.resize(channels);
  second_.resize(channels);
}

// One pixel's channels, contiguous (channels last).
template <class T>
void ChannelSums::sum_pixel(const T* x, const float* g, const double* center, double* s1,
                            double* s2) const {
  using reference::Element;
  const std::int64_t channels = x_.dims[1];
  if (g == nullptr) {
    for (std::int64_t c = 0; c < channels; ++c) {
      const double u = static_cast<double>(Element<T>::load(x[c])) - center[c];
      s1[c] += u;
      s2[c] += u * u;
    }
    return;
  }
  for (std::int64_t c = 0; c < channels; ++c) {
    const double u = static_cast<double>(Element<T>::load(x[c])) - center[c];
    s1[c] += g[c];
    s2[c] += g[c] * u;
  }
}

// One channel's run of pixels, W's stride apart, in blocks of kLanes.
template <class T>
void ChannelSums::sum_run(const T* x, const float* g, std::int64_t length, double center,
                          double& s1, double& s2) const {
  const std::int64_t step = x_.strides[4];
  double a[kLanes] = {}, b[kLanes] = {};
  std::int64_t i = 0;
  if (step == 1 && g == nullptr)
    for (; i + kLanes <= length; i += kLanes)
      accumulate_block<T, true>(x + i, nullptr, center, a, b);
  else if (step == 1)
    for (; i + kLanes <= length; i += kLanes)
      accumulate_block<T, false>(x + i, g + i, center, a, b);
  for (; i < length; ++i) {
    const double u = static_cast<double>(reference::Element<T>::load(x[i * step])) - center;
    const double w = g == nullptr ? u : static_cast<double>(g[i * step]);
    a[i % kLanes] += w;
    b[i % kLanes] += w * u;
  }
  s1 += (a[0] + a[1]) + (a[2] + a[3]);
  s2 += (b[0] + b[1]) + (b[2] + b[3]);
}

template <class T>
void ChannelSums::sum_slice(const T* x, const float* g, const double* center,
                            std::int64_t slice) {
  const std::int64_t channels = x_.dims[1];
  const std::int64_t begin = pixels_ * slice / kSlices, end = pixels_ * (slice + 1) / kSlices;
  double* s1 = first_partial_.data() + slice * channels;
  double* s2 = second_partial_.data() + slice * channels;
  std::fill_n(s1, channels, 0.0);
  std::fill_n(s2, channels, 0.0);
  if (x_.strides[1] == 1) {
    for_each_run(x_, begin, end, [&](std::int64_t offset, std::int64_t length) {
      for (std::int64_t i = 0; i < length; ++i) {
        const std::int64_t at = offset + i * x_.strides[4];
        sum_pixel(x + at, g == nullptr ? nullptr : g + at, center, s1, s2);
      }
    });
    return;
  }
  for (std::int64_t c = 0; c < channels; ++c)
    for_each_run(x_, begin, end, [&](std::int64_t offset, std::int64_t length) {
      const std::int64_t at = offset + c * x_.strides[1];
      sum_run(x + at, g == nullptr ? nullptr : g + at, length, center[c], s1[c], s2[c]);
    });
}

void ChannelSums::compute(DataType dtype, const void* x, const float* g, const double* center) {
  const std::int64_t channels = x_.dims[1];
  reference::dispatch_dtype(dtype, [&]<class T>() {
    const T* values = static_cast<const T*>(x);
#pragma omp parallel for schedule(static) if (reference::worth_parallel(pixels_ * channels))
    for (std::int64_t slice = 0; slice < kSlices; ++slice) sum_slice(values, g, center, slice);
  });
  for (std::int64_t c = 0; c < channels; ++c) {
    double s1 = 0, s2 = 0;
    for (std::int64_t slice = 0; slice < kSlices; ++slice) {
      s1 += first_partial_[static_cast<std::size_t>(slice * channels + c)];
      s2 += second_partial_[static_cast<std::size_t>(slice * channels + c)];
    }
    first_[static_cast<std::size_t>(c)] = s1;
    second_[static_cast<std::size_t>(c)] = s2;
  }
}

}  // namespace convjit
