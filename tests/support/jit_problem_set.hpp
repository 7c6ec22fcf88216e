// Test helper: the descriptor set the JIT kernel templates are verified on,
// on a GPU (test_gpu_backends.cpp) and in the host emulator
// (test_emulated_kernels.cpp): random convolutions in every direction,
// pools in every mode and direction, bias gradients, over 1D/2D/3D,
// strides, asymmetric padding, dilation, groups (depthwise included) and
// NCHW, NHWC and halo layouts; and every layer of the reference models.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "dispatcher/descriptor/descriptor_builder.hpp"
#include "dispatcher/models/model_table.hpp"
#include "support/problems.hpp"

namespace convjit::test {

// The dtypes the kernel templates are built for.
inline constexpr DataType kDtypes[] = {DataType::f32, DataType::f16, DataType::bf16};

inline void set_dtype(convjit_tensor_desc_t& t, DataType dtype) {
  t.dtype = static_cast<convjit_dtype_t>(dtype);
}

// The case's descriptors in `dtype`, one per direction asked for.
inline std::vector<OpDescriptor> conv_descriptors(
    const ConvCase& c, DataType dtype,
    std::initializer_list<Direction> directions = {Direction::fwd, Direction::bwddata,
                                                   Direction::bwdfilt}) {
  std::vector<OpDescriptor> out;
  auto t = make_conv_tensors<float>(c);
  auto x = t.x.desc(), w = t.w.desc(), y = t.y.desc();
  set_dtype(x, dtype), set_dtype(w, dtype), set_dtype(y, dtype);
  for (Direction dir : directions) {
    auto d = make_conv_descriptor(&t.params, dir, &x, &w, &y);
    EXPECT_TRUE(d.is_ok()) << d.status().message() << " for " << c.describe();
    if (d.is_ok()) out.push_back(d.value());
  }
  return out;
}

// The case's descriptor in one direction.
inline OpDescriptor descriptor(const ConvCase& c, DataType dtype, Direction direction) {
  return conv_descriptors(c, dtype, {direction}).at(0);
}

// `cases` random convolutions, each in fwd, bwddata and bwdfilt.
// `symmetric`: only what cuDNN expresses (see random_conv_case).
inline std::vector<OpDescriptor> random_conv_descriptors(std::mt19937& rng, DataType dtype,
                                                         int cases, bool symmetric = false) {
  std::vector<OpDescriptor> out;
  for (int i = 0; i < cases; ++i)
    for (OpDescriptor& d : conv_descriptors(random_conv_case(rng, 1 + i % 3, symmetric), dtype))
      out.push_back(d);
  return out;
}

// A channels-last conv, KRSC or KCRS filters, channels a multiple of 8 (16
// bytes of a 16-bit dtype): what the Hopper conv (wgmma_conv.hpp) serves.
// Channels on and off its 64-channel K step, filters on and off its
// 128-filter tile, random windows, strides, dilations and padding.
inline ConvCase random_channels_last_conv(std::mt19937& rng, int spatial) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  ConvCase c;
  c.batch = pick(1, 3);
  c.channels = 8 * pick(1, 18);
  c.filters = pick(1, 2) == 1 ? pick(1, 40) : pick(120, 200);
  randomize_windows(c, rng, spatial, spatial == 3 ? 6 : (spatial == 2 ? 11 : 40));
  c.layout = TestLayout::nhwc;
  c.filter_layout = pick(0, 1) == 0 ? TestLayout::nchw : TestLayout::nhwc;
  return c;
}

// A channels-last conv of 2 to `max_taps` taps along W at stride 1 there
// and dilation 1 or 2, any strides and padding elsewhere, of 40 to 144
// channels (the Hopper conv's 64-channel K step): what its row-tap tiles
// serve.
inline ConvCase random_row_tap_conv(std::mt19937& rng, int spatial, std::int64_t max_taps) {
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  ConvCase c = random_channels_last_conv(rng, spatial);
  c.channels = 8 * pick(5, 18);
  const std::int64_t taps = pick(2, max_taps), dilation = pick(1, 2);
  const std::int64_t extent = dilation * (taps - 1) + 1;
  c.kernel.back() = taps, c.dilation.back() = dilation, c.stride.back() = 1;
  c.input.back() = std::max(c.input.back(), extent);
  c.pad_begin.back() = pick(0, extent - 1), c.pad_end.back() = pick(0, extent - 1);
  return c;
}

// The case's descriptors in `dtype`, forward and backward.
inline std::vector<OpDescriptor> pool_descriptors(const PoolCase& c, DataType dtype) {
  std::vector<OpDescriptor> out;
  auto t = make_pool_tensors<float>(c);
  auto x = t.x.desc(), y = t.y.desc();
  set_dtype(x, dtype), set_dtype(y, dtype);
  for (Direction dir : {Direction::fwd, Direction::bwd}) {
    auto d = make_pool_descriptor(&t.params, dir, &x, &y);
    EXPECT_TRUE(d.is_ok()) << d.status().message();
    if (d.is_ok()) out.push_back(d.value());
  }
  return out;
}

// `cases` random pools per mode, each forward and backward.
inline std::vector<OpDescriptor> random_pool_descriptors(std::mt19937& rng, DataType dtype,
                                                         int cases, bool symmetric = false) {
  std::vector<OpDescriptor> out;
  for (auto mode : {CONVJIT_POOL_MAX, CONVJIT_POOL_AVG_EXCLUDE_PAD, CONVJIT_POOL_AVG_INCLUDE_PAD})
    for (int i = 0; i < cases; ++i)
      for (OpDescriptor& d : pool_descriptors(random_pool_case(rng, 1 + i % 3, mode, symmetric),
                                              dtype))
        out.push_back(d);
  return out;
}

// Bias gradients over random conv outputs (their dy).
inline std::vector<OpDescriptor> random_bias_descriptors(std::mt19937& rng, DataType dtype,
                                                         int cases) {
  std::vector<OpDescriptor> out;
  for (int i = 0; i < cases; ++i) {
    auto t = make_conv_tensors<float>(random_conv_case(rng, 1 + i % 3));
    auto dy = t.y.desc();
    set_dtype(dy, dtype);
    auto d = make_bias_grad_descriptor(&dy);
    EXPECT_TRUE(d.is_ok()) << d.status().message();
    if (d.is_ok()) out.push_back(d.value());
  }
  return out;
}

// `cases` random resizes, each fwd and bwd: every mode and coordinate rule,
// 1D/2D/3D, up and down by integer and fractional factors (a given scale in
// some), odd sizes, NCHW, NHWC and halo layouts.
inline std::vector<OpDescriptor> random_resize_descriptors(std::mt19937& rng, DataType dtype,
                                                           int cases) {
  std::vector<OpDescriptor> out;
  auto pick = [&](int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng); };
  for (int i = 0; i < cases; ++i) {
    const int spatial = 1 + i % 3;
    const auto mode = static_cast<convjit_resize_mode_t>(CONVJIT_RESIZE_NEAREST + pick(5));
    ResizeParams p(spatial, mode);
    p.coordinates = static_cast<convjit_resize_coordinates_t>(pick(mode == CONVJIT_RESIZE_LINEAR ? 4 : 5));
    std::vector<std::int64_t> x_dims{1 + pick(2), 1 + pick(11)}, y_dims = x_dims;
    const bool given = pick(3) == 0;
    for (int a = 0; a < spatial; ++a) {
      const std::int64_t in = 1 + pick(spatial == 3 ? 5 : 9);
      const double scales[] = {2.0, 3.0, 0.5, 1.5, 0.7, 2.5};
      const double scale = scales[pick(6)];
      const auto size = static_cast<std::int64_t>(std::floor(static_cast<double>(in) * scale));
      x_dims.push_back(in);
      y_dims.push_back(std::max<std::int64_t>(size, 1));
      if (given && size >= 1) p.scale[a] = scale;
    }
    const TestLayout layouts[] = {TestLayout::nchw, TestLayout::nhwc, TestLayout::halo};
    HostTensor<float> x(x_dims, layouts[pick(3)]), y(y_dims, layouts[pick(3)]);
    auto xd = x.desc(), yd = y.desc();
    set_dtype(xd, dtype), set_dtype(yd, dtype);
    for (Direction dir : {Direction::fwd, Direction::bwd}) {
      auto d = make_resize_descriptor(&p, dir, &xd, &yd);
      EXPECT_TRUE(d.is_ok()) << d.status().message();
      if (d.is_ok()) out.push_back(d.value());
    }
  }
  return out;
}

// The operations of a reference model's training step: its convolutions,
// pools and bias gradients; with `every_op`, its BatchNorms and upsamples
// too (which oneDNN serves in part, and the sweeps written before them
// leave out).
inline std::vector<OpDescriptor> model_descriptors(const std::string& model,
                                                   const ModelOptions& options,
                                                   bool every_op = false) {
  std::vector<OpDescriptor> out;
  auto ops = expand_model(*find_model(model), options);
  EXPECT_TRUE(ops.is_ok()) << ops.status().message();
  if (ops.is_ok())
    for (const ModelOp& op : ops.value())
      if (every_op || !(op.desc.is_batchnorm() || op.desc.is_resize())) out.push_back(op.desc);
  return out;
}

}  // namespace convjit::test
