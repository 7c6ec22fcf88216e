// Batchnorm calls for any backend against the reference: one call's
// operands (x, dy, the output and every per-channel operand) made at random,
// the descriptors of a set of cases (1D/2D/3D, odd sizes and channel counts,
// batch 1, NCHW, NHWC and halo layouts, channels long enough to be split),
// and the comparison of every output and per-channel result.
//
// Tolerance: the dtype's output tolerance, and for the per-channel values
// 1e-4 relative: they are f32 sums of at most 4 x 40 x 40 values of
// [-1, 1], against f64 in the reference (a kernel that shifts by the
// channel's first value, or sums the squares of x - mean as oneDNN does,
// loses little to the variance's cancellation).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string_view>
#include <vector>

#include "dispatcher/backend.hpp"
#include "dispatcher/backends/reference/batchnorm_reference.hpp"
#include "dispatcher/descriptor/descriptor_builder.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/tolerance.hpp"
#include "support/host_device.hpp"
#include "support/host_tensor.hpp"
#include "support/jit_problem_set.hpp"
#include "support/reference_comparison.hpp"

namespace convjit::test {

inline constexpr double kChannelTolerance = 1e-4;

using Channels = std::vector<float>;

// One call's operands: x, dy, the output and every per-channel operand.
struct NormCall {
  std::vector<unsigned char> x, dy, out;
  Channels scale, shift, running_mean, running_var, mean, invstd, scale_grad, shift_grad;
  double alpha = 1, beta = 0;

  ExecArgs args(const OpDescriptor& d) {
    ExecArgs a;
    a.x = x.data();
    a.dy = d.direction == Direction::bwd ? dy.data() : nullptr;
    a.out = out.empty() ? nullptr : out.data();
    a.alpha = alpha, a.beta = beta;
    NormOperands& n = a.norm;
    n.scale = d.has_norm_flag(kNormScale) ? scale.data() : nullptr;
    n.shift = d.has_norm_flag(kNormShift) ? shift.data() : nullptr;
    n.running_mean = running_mean.data(), n.running_var = running_var.data();
    n.mean = mean.data(), n.invstd = invstd.data();
    n.scale_grad = scale_grad.data(), n.shift_grad = shift_grad.data();
    n.momentum = 0.3;
    return a;
  }
};

inline NormCall random_call(const OpDescriptor& d, std::mt19937& rng, double alpha, double beta) {
  NormCall c;
  c.x = test::random_bytes(d.dtype, slot_bytes(d, Slot::x), rng);
  c.dy = test::random_bytes(d.dtype, slot_bytes(d, Slot::y), rng);
  const bool writes_out = d.direction == Direction::fwd || d.has_norm_flag(kNormGradInput);
  if (writes_out)
    c.out = beta == 0 ? std::vector<unsigned char>(output_bytes(d), 0xff)
                      : test::random_bytes(d.dtype, output_bytes(d), rng);
  const auto channels = static_cast<std::size_t>(d.x_dims[1]);
  std::uniform_real_distribution<float> u(0.5f, 1.5f), centred(-0.5f, 0.5f);
  for (Channels* v : {&c.scale, &c.shift, &c.running_mean, &c.running_var}) {
    v->resize(channels);
    for (float& e : *v) e = u(rng);
  }
  c.mean.resize(channels), c.invstd.resize(channels);
  for (std::size_t i = 0; i < channels; ++i)  // a backward's saved statistics
    c.mean[i] = centred(rng), c.invstd[i] = u(rng);
  c.scale_grad.assign(channels, -7), c.shift_grad.assign(channels, -7);
  c.alpha = alpha, c.beta = beta;
  return c;
}

inline void expect_channels_near(const Channels& got, const Channels& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], kChannelTolerance * (1 + std::abs(want[i])))
        << what << "[" << i << "]";
}

struct Case {
  std::vector<std::int64_t> dims;
  test::TestLayout layout;
};

inline Result<OpDescriptor> descriptor(const Case& c, DataType dtype, Direction dir,
                                       std::int32_t flags,
                                       convjit_activation_t act = CONVJIT_ACTIVATION_IDENTITY,
                                       bool onnx = false) {
  test::HostTensor<float> x(c.dims, c.layout), y(c.dims, c.layout);
  auto xd = x.desc(), yd = y.desc();
  test::set_dtype(xd, dtype), test::set_dtype(yd, dtype);
  BatchNormParams p;
  p.activation = act;
  p.onnx_running_stats = onnx ? 1 : 0;
  return make_batchnorm_descriptor(&p, dir, flags, &xd, &yd);
}

inline const Case kCases[] = {
    {{2, 3, 5}, test::TestLayout::nchw},
    {{1, 5, 4, 3}, test::TestLayout::nhwc},
    {{2, 7, 3, 4}, test::TestLayout::halo},
    {{2, 2, 3, 2, 3}, test::TestLayout::nchw},
    {{3, 16, 2, 5}, test::TestLayout::nhwc},
    {{2, 3, 40, 40}, test::TestLayout::nchw},
    // Long enough channels to be cut into several slices in each variant.
    {{4, 2, 40, 40}, test::TestLayout::nchw},
    {{4, 16, 40, 40}, test::TestLayout::nhwc},
};
inline constexpr std::int32_t kAffine = kNormScale | kNormShift;  // NormFlag bits
inline constexpr std::int32_t kAllGrads = kNormGradInput | kNormGradScale | kNormGradShift;

inline void check_batchnorm(Backend& backend, std::string_view variant, const OpDescriptor& d,
                            std::mt19937& rng, double alpha = 1, double beta = 0) {
  SCOPED_TRACE(descriptor_name(d));
  NormCall want = random_call(d, rng, alpha, beta), got = want;
  reference::batchnorm_reference(d, want.args(d));
  BuildTrace trace;
  auto kernel = backend.build_variant(d, kHost, variant, trace);
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
  const Status s = kernel.value()->execute(got.args(d));
  ASSERT_TRUE(s.is_ok()) << s.message();
  const double rtol = kernel_tolerance(d);
  for (std::size_t i = 0; i < got.out.size() / element_size(d.dtype); ++i) {
    const double expected = load_element(want.out.data(), i, d.dtype),
                 actual = load_element(got.out.data(), i, d.dtype);
    if (std::isnan(expected)) continue;  // a gap of a strided output
    ASSERT_NEAR(actual, expected, rtol * (1 + std::abs(expected))) << "element " << i;
  }
  expect_channels_near(got.running_mean, want.running_mean, "running_mean");
  expect_channels_near(got.running_var, want.running_var, "running_var");
  expect_channels_near(got.mean, want.mean, "mean");
  expect_channels_near(got.invstd, want.invstd, "invstd");
  expect_channels_near(got.scale_grad, want.scale_grad, "scale_grad");
  expect_channels_near(got.shift_grad, want.shift_grad, "shift_grad");
}

}  // namespace convjit::test
