// Test helper: compact conv and pool problem specs, their tensors, and
// random problem generators covering dims, strides, padding, dilation,
// groups and layouts.
#pragma once

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "host_tensor.hpp"

namespace convjit::test {

// What an output is filled with before a call, to show any element it leaves.
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct ConvCase {
  std::int64_t batch = 1, channels = 1, filters = 1, groups = 1;
  std::vector<std::int64_t> input, kernel, stride, pad_begin, pad_end, dilation;
  TestLayout layout = TestLayout::nchw;
  TestLayout filter_layout = TestLayout::nchw;  // nhwc: KRSC, channels contiguous

  int spatial() const { return static_cast<int>(input.size()); }

  ConvParams params() const {
    ConvParams p(spatial());
    p.groups = groups;
    for (int i = 0; i < spatial(); ++i) {
      const auto at = static_cast<std::size_t>(i);
      p.stride[i] = stride.empty() ? 1 : stride[at];
      p.dilation[i] = dilation.empty() ? 1 : dilation[at];
      p.pad_begin[i] = pad_begin.empty() ? 0 : pad_begin[at];
      p.pad_end[i] = pad_end.empty() ? p.pad_begin[i] : pad_end[at];
    }
    return p;
  }

  std::string describe() const {
    return fmt::format("N={} C={} K={} G={} in=[{}] k=[{}] s=[{}] pb=[{}] pe=[{}] d=[{}] layout={} w={}",
                       batch, channels, filters, groups, fmt::join(input, ","),
                       fmt::join(kernel, ","), fmt::join(stride, ","), fmt::join(pad_begin, ","),
                       fmt::join(pad_end, ","), fmt::join(dilation, ","), layout_name(layout),
                       layout_name(filter_layout));
  }
};

template <class T>
struct ConvTensors {
  ConvParams params;
  HostTensor<T> x, w, y;
};

template <class T>
ConvTensors<T> make_conv_tensors(const ConvCase& c) {
  ConvTensors<T> t{c.params(), {}, {}, {}};
  std::vector<std::int64_t> x_dims{c.batch, c.channels};
  std::vector<std::int64_t> w_dims{c.filters, c.channels / c.groups};
  x_dims.insert(x_dims.end(), c.input.begin(), c.input.end());
  w_dims.insert(w_dims.end(), c.kernel.begin(), c.kernel.end());
  t.x = HostTensor<T>(x_dims, c.layout);
  t.w = HostTensor<T>(w_dims, c.filter_layout);
  std::int64_t y_dims[CONVJIT_MAX_RANK] = {};
  const Status s = conv_output_dims(t.params, t.x.desc(), t.w.desc(), y_dims);
  EXPECT_TRUE(s.is_ok()) << s.message() << " for " << c.describe();
  t.y = HostTensor<T>(std::vector<std::int64_t>(y_dims, y_dims + x_dims.size()), c.layout);
  return t;
}

// A random valid conv: 1D/2D/3D, strides, asymmetric padding up to the
// dilated filter's extent (so some outputs see only padding), dilation,
// groups (depthwise included), any layout.  `symmetric` makes pad_end equal
// pad_begin (what cuDNN expresses) from the same random draws.
inline ConvCase random_conv_case(std::mt19937& rng, int spatial, bool symmetric = false) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  ConvCase c;
  c.groups = std::vector<std::int64_t>{1, 1, 2, 3}[static_cast<std::size_t>(pick(0, 3))];
  const bool depthwise = pick(0, 4) == 0;
  c.channels = c.groups * pick(1, 3);
  c.filters = c.groups * pick(1, 3);
  if (depthwise) c.groups = c.filters = c.channels = pick(2, 4);
  c.batch = pick(1, 3);
  const std::int64_t max_in = spatial == 3 ? 6 : (spatial == 2 ? 9 : 13);
  for (int i = 0; i < spatial; ++i) {
    const std::int64_t k = pick(1, 3), d = pick(1, 2), extent = d * (k - 1) + 1;
    const std::int64_t in = pick(extent, max_in);
    c.kernel.push_back(k);
    c.dilation.push_back(d);
    c.stride.push_back(pick(1, 3));
    c.input.push_back(in);
    c.pad_begin.push_back(pick(0, extent));
    c.pad_end.push_back(pick(0, extent));
    if (symmetric) c.pad_end.back() = c.pad_begin.back();
  }
  c.layout = static_cast<TestLayout>(pick(0, 2));
  return c;
}

// Random windows over `spatial` dims (sizes 1-3, dilations 1-2, strides
// 1-3, inputs from the dilated window up to `max_in`, asymmetric padding
// up to the dilated window's extent)
// and random activation and filter layouts, for tests that choose the
// channels themselves.
inline void randomize_windows(ConvCase& c, std::mt19937& rng, int spatial, std::int64_t max_in) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int i = 0; i < spatial; ++i) {
    const std::int64_t k = pick(1, 3), d = pick(1, 2), extent = d * (k - 1) + 1;
    c.kernel.push_back(k);
    c.dilation.push_back(d);
    c.stride.push_back(pick(1, 3));
    c.input.push_back(pick(extent, max_in));
    c.pad_begin.push_back(pick(0, extent));
    c.pad_end.push_back(pick(0, extent));
  }
  c.layout = static_cast<TestLayout>(pick(0, 2));
  c.filter_layout = pick(0, 1) == 0 ? TestLayout::nchw : TestLayout::nhwc;
}

// The filter counts the pixels kernel's random tests draw from: a
// thread's group of 16 filters partly or wholly past the last one, counts
// off the 8-filter chunk.
inline constexpr std::int64_t kPixelFilterCounts[] = {1, 3, 8, 12, 16, 17, 24, 32, 40};

// A 3 x 3 conv of padding 1 as YOLO11n's small-channel layers have them
// (K C R S filters), over 2 images of `input` pixels.
inline ConvCase small_channel_3x3(std::int64_t channels, std::int64_t filters, std::int64_t stride,
                                  TestLayout layout, std::vector<std::int64_t> input) {
  ConvCase c;
  c.batch = 2, c.channels = channels, c.filters = filters;
  c.input = std::move(input), c.kernel = {3, 3}, c.stride = {stride, stride}, c.dilation = {1, 1};
  c.pad_begin = {1, 1}, c.pad_end = {1, 1};
  c.layout = layout, c.filter_layout = TestLayout::nchw;
  return c;
}

struct PoolCase {
  std::int64_t batch = 1, channels = 1;
  std::vector<std::int64_t> input, window, stride, pad_begin, pad_end, dilation;
  convjit_pool_mode_t mode = CONVJIT_POOL_MAX;
  bool ceil = false;
  TestLayout layout = TestLayout::nchw;
  TestLayout filter_layout = TestLayout::nchw;  // nhwc: KRSC, channels contiguous

  int spatial() const { return static_cast<int>(input.size()); }

  PoolParams params() const {
    PoolParams p(spatial(), mode);
    for (int i = 0; i < spatial(); ++i) {
      const auto at = static_cast<std::size_t>(i);
      p.window[i] = window[at];
      p.stride[i] = stride.empty() ? 1 : stride[at];
      p.dilation[i] = dilation.empty() ? 1 : dilation[at];
      p.pad_begin[i] = pad_begin.empty() ? 0 : pad_begin[at];
      p.pad_end[i] = pad_end.empty() ? p.pad_begin[i] : pad_end[at];
    }
    return p;
  }
};

template <class T>
struct PoolTensors {
  PoolParams params;
  HostTensor<T> x, y;
};

template <class T>
PoolTensors<T> make_pool_tensors(const PoolCase& c) {
  PoolTensors<T> t{c.params(), {}, {}};
  std::vector<std::int64_t> x_dims{c.batch, c.channels};
  x_dims.insert(x_dims.end(), c.input.begin(), c.input.end());
  t.x = HostTensor<T>(x_dims, c.layout);
  std::int64_t y_dims[CONVJIT_MAX_RANK] = {};
  const Status s = pool_output_dims(t.params, t.x.desc(), c.ceil, y_dims);
  EXPECT_TRUE(s.is_ok()) << s.message();
  t.y = HostTensor<T>(std::vector<std::int64_t>(y_dims, y_dims + x_dims.size()), c.layout);
  return t;
}

// `symmetric`: pad_end equal to pad_begin, floor rounding and no dilation
// (what cuDNN expresses), from the same random draws.
inline PoolCase random_pool_case(std::mt19937& rng, int spatial, convjit_pool_mode_t mode,
                                 bool symmetric = false) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  PoolCase c;
  c.mode = mode;
  c.batch = pick(1, 2);
  c.channels = pick(1, 3);
  c.ceil = pick(0, 1) == 1;
  const std::int64_t max_in = spatial == 3 ? 7 : (spatial == 2 ? 10 : 14);
  for (int i = 0; i < spatial; ++i) {
    const std::int64_t k = pick(1, 4);
    // Dilation only for max.  Padding goes up to the extent less one, so a
    // dilated window may cover padding alone.
    std::int64_t d = mode == CONVJIT_POOL_MAX ? pick(1, 2) : 1;
    if (symmetric) d = 1;
    const std::int64_t extent = d * (k - 1) + 1;
    c.window.push_back(k);
    c.dilation.push_back(d);
    c.stride.push_back(pick(1, 3));
    c.input.push_back(pick(extent, max_in));
    const std::int64_t max_pad = extent - 1;
    c.pad_begin.push_back(pick(0, max_pad));
    c.pad_end.push_back(pick(0, max_pad));
    if (symmetric) c.pad_end.back() = c.pad_begin.back();
  }
  if (symmetric) c.ceil = false;
  c.layout = static_cast<TestLayout>(pick(0, 2));
  return c;
}

}  // namespace convjit::test
