// The host reference batchnorm: a hand-worked channel (both running
// updates), the normalised output's moments, finite differences of every
// gradient with and without a fused activation, layout invariance,
// alpha/beta, NaN propagation and the errors bad input gets.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "support/host_tensor.hpp"
#include "support/policy_scope.hpp"

namespace convjit::test {
namespace {

using Channels = std::vector<double>;

// One batchnorm problem in f64: x, y, and the per-channel operands.
struct Norm {
  Norm(std::vector<std::int64_t> dims, TestLayout layout, std::uint32_t seed = 1)
      : x(dims, layout), y(dims, layout), c(static_cast<std::size_t>(dims[1])) {
    std::mt19937 rng(seed);
    x.fill_random(rng, -2.0, 3.0);
    std::uniform_real_distribution<double> u(0.5, 1.5);
    for (auto* v : {&scale, &shift, &running_mean, &running_var}) {
      v->resize(c);
      for (double& e : *v) e = u(rng);
    }
    mean.assign(c, 0), invstd.assign(c, 0);
  }
  HostTensor<double> x, y;
  std::size_t c;
  Channels scale, shift, running_mean, running_var, mean, invstd;
  BatchNormParams params;

  Status train(double alpha = 1, double beta = 0) {
    const PolicyScope reference(Policy::reference);
    return batchnorm_forward_training(params, x.desc(), x.data(), scale.data(), shift.data(),
                                      y.desc(), y.data(), running_mean.data(), running_var.data(),
                                      mean.data(), invstd.data(), alpha, beta);
  }
  Status infer() {
    const PolicyScope reference(Policy::reference);
    return batchnorm_forward_inference(params, x.desc(), x.data(), scale.data(), shift.data(),
                                       running_mean.data(), running_var.data(), y.desc(),
                                       y.data());
  }
};

std::int64_t channel_of(const HostTensor<double>& t, std::int64_t logical) {
  std::int64_t inner = 1;
  for (std::size_t i = 2; i < t.dims().size(); ++i) inner *= t.dims()[i];
  return (logical / inner) % t.dims()[1];
}

// x = [[1, 2], [3, 4]] (N = 2, C = 1, W = 2): mean 2.5, biased variance
// 1.25, unbiased 5/3.
TEST(BatchNormHandWorked, OneChannelWithBothRunningUpdates) {
  for (const bool onnx : {false, true}) {
    Norm n({2, 1, 2}, TestLayout::nchw);
    for (int i = 0; i < 4; ++i) n.x.set(i, i + 1);
    n.scale = {2}, n.shift = {0.5}, n.running_mean = {1}, n.running_var = {3};
    n.params.epsilon = 0.25;
    n.params.onnx_running_stats = onnx ? 1 : 0;
    ASSERT_TRUE(n.train().is_ok());
    const double invstd = 1 / std::sqrt(1.25 + 0.25);
    EXPECT_DOUBLE_EQ(n.mean[0], 2.5);
    EXPECT_DOUBLE_EQ(n.invstd[0], invstd);
    for (int i = 0; i < 4; ++i) EXPECT_DOUBLE_EQ(n.y.get(i), 2 * (i + 1 - 2.5) * invstd + 0.5);
    if (onnx) {  // momentum 0.1 keeps 10% of the running value, population variance
      EXPECT_DOUBLE_EQ(n.running_mean[0], 0.1 * 1 + 0.9 * 2.5);
      EXPECT_DOUBLE_EQ(n.running_var[0], 0.1 * 3 + 0.9 * 1.25);
    } else {  // PyTorch: 90% kept, the unbiased variance
      EXPECT_DOUBLE_EQ(n.running_mean[0], 0.9 * 1 + 0.1 * 2.5);
      EXPECT_DOUBLE_EQ(n.running_var[0], 0.9 * 3 + 0.1 * 1.25 * 4 / 3);
    }
  }
}

TEST(BatchNormReference, TrainingOutputHasTheShiftAsMeanAndTheScaleAsDeviation) {
  for (const TestLayout layout : {TestLayout::nchw, TestLayout::nhwc, TestLayout::halo}) {
    Norm n({3, 5, 4, 7}, layout);
    n.params.epsilon = 0;
    ASSERT_TRUE(n.train().is_ok());
    std::vector<double> sum(n.c), squares(n.c);
    for (std::int64_t i = 0; i < n.y.count(); ++i)
      sum[static_cast<std::size_t>(channel_of(n.y, i))] += n.y.get(i);
    const double count = 3 * 4 * 7;
    for (std::int64_t i = 0; i < n.y.count(); ++i) {
      const auto ch = static_cast<std::size_t>(channel_of(n.y, i));
      const double d = n.y.get(i) - sum[ch] / count;
      squares[ch] += d * d;
    }
    for (std::size_t ch = 0; ch < n.c; ++ch) {
      EXPECT_NEAR(sum[ch] / count, n.shift[ch], 1e-12) << layout_name(layout);
      EXPECT_NEAR(std::sqrt(squares[ch] / count), n.scale[ch], 1e-12) << layout_name(layout);
    }
  }
}

TEST(BatchNormReference, InferenceUsesTheRunningStatisticsAndLeavesThemAlone) {
  Norm n({2, 3, 5}, TestLayout::nhwc);
  const Channels running_mean = n.running_mean, running_var = n.running_var;
  ASSERT_TRUE(n.infer().is_ok());
  EXPECT_EQ(n.running_mean, running_mean);
  EXPECT_EQ(n.running_var, running_var);
  for (std::int64_t i = 0; i < n.x.count(); ++i) {
    const auto ch = static_cast<std::size_t>(channel_of(n.x, i));
    const double expected = (n.x.get(i) - running_mean[ch]) /
                                std::sqrt(running_var[ch] + n.params.epsilon) * n.scale[ch] +
                            n.shift[ch];
    EXPECT_NEAR(n.y.get(i), expected, 1e-14);
  }
}

TEST(BatchNormReference, LayoutsAndAlphaBetaAgree) {
  Norm nchw({2, 3, 3, 2, 4}, TestLayout::nchw, 7), halo({2, 3, 3, 2, 4}, TestLayout::halo, 7);
  for (std::int64_t i = 0; i < nchw.x.count(); ++i) halo.x.set(i, nchw.x.get(i));
  halo.scale = nchw.scale, halo.shift = nchw.shift;
  halo.running_mean = nchw.running_mean, halo.running_var = nchw.running_var;
  for (std::int64_t i = 0; i < nchw.y.count(); ++i) halo.y.set(i, 1.0 + static_cast<double>(i % 3));
  ASSERT_TRUE(nchw.train().is_ok());
  ASSERT_TRUE(halo.train(0.5, 2.0).is_ok());
  for (std::int64_t i = 0; i < nchw.y.count(); ++i)
    EXPECT_NEAR(halo.y.get(i), 0.5 * nchw.y.get(i) + 2.0 * (1.0 + static_cast<double>(i % 3)), 1e-13);
}

// L = sum(r * y); its gradients by central differences against the backward.
class BatchNormGradient : public ::testing::TestWithParam<std::tuple<bool, convjit_activation_t>> {
 protected:
  static double loss(Norm& n, const HostTensor<double>& r, bool training) {
    Norm copy = n;  // training updates the running statistics: keep n's
    EXPECT_TRUE((training ? copy.train() : copy.infer()).is_ok());
    return dot(copy.y, r);
  }
};

TEST_P(BatchNormGradient, MatchesFiniteDifferences) {
  const auto [training, activation] = GetParam();
  Norm n({2, 3, 5}, TestLayout::nhwc, 3);
  n.params.activation = activation;
  HostTensor<double> r({2, 3, 5}, TestLayout::nchw), dx({2, 3, 5}, TestLayout::nhwc);
  std::mt19937 rng(11);
  r.fill_random(rng);
  Norm forward = n;
  ASSERT_TRUE((training ? forward.train() : forward.infer()).is_ok());
  Channels dscale(n.c), dshift(n.c);
  {
    const PolicyScope reference(Policy::reference);
    const void* mean = training ? forward.mean.data() : n.running_mean.data();
    const void* var = training ? forward.invstd.data() : n.running_var.data();
    ASSERT_TRUE(batchnorm_backward(n.params, training, n.x.desc(), n.x.data(), r.desc(), r.data(),
                                   n.scale.data(), n.shift.data(), mean, var,
                                   CONVJIT_GRAD_INPUT | CONVJIT_GRAD_WEIGHT | CONVJIT_GRAD_BIAS,
                                   dx.data(), dscale.data(), dshift.data())
                    .is_ok());
  }
  constexpr double h = 1e-6;
  auto central = [&](auto&& perturb) {
    perturb(h);
    const double up = loss(n, r, training);
    perturb(-2 * h);
    const double down = loss(n, r, training);
    perturb(h);
    return (up - down) / (2 * h);
  };
  for (std::int64_t i = 0; i < n.x.count(); ++i) {
    const double v = n.x.get(i);
    const double numeric = central([&](double d) { n.x.set(i, n.x.get(i) + d); });
    n.x.set(i, v);
    EXPECT_NEAR(dx.get(i), numeric, 1e-6) << "dx " << i;
  }
  for (std::size_t ch = 0; ch < n.c; ++ch) {
    EXPECT_NEAR(dscale[ch], central([&](double d) { n.scale[ch] += d; }), 1e-6) << ch;
    EXPECT_NEAR(dshift[ch], central([&](double d) { n.shift[ch] += d; }), 1e-6) << ch;
  }
}

INSTANTIATE_TEST_SUITE_P(
    TrainingAndInference, BatchNormGradient,
    ::testing::Combine(::testing::Bool(),
                       ::testing::Values(CONVJIT_ACTIVATION_IDENTITY, CONVJIT_ACTIVATION_RELU,
                                         CONVJIT_ACTIVATION_SILU)));

TEST(BatchNormReference, BackwardComputesOnlyWhatTheMaskAsks) {
  Norm n({2, 2, 3}, TestLayout::nchw);
  ASSERT_TRUE(n.train().is_ok());
  HostTensor<double> dx({2, 2, 3}, TestLayout::nchw);
  dx.fill(7);
  Channels dscale(n.c, 7), dshift(n.c, 7);
  const PolicyScope reference(Policy::reference);
  ASSERT_TRUE(batchnorm_backward(n.params, true, n.x.desc(), n.x.data(), n.y.desc(), n.y.data(),
                                 nullptr, nullptr, n.mean.data(), n.invstd.data(),
                                 CONVJIT_GRAD_WEIGHT, nullptr, dscale.data(), dshift.data())
                  .is_ok());
  EXPECT_EQ(dx.values(), std::vector<double>(12, 7.0));
  EXPECT_EQ(dshift, Channels(n.c, 7.0));
  EXPECT_NE(dscale, Channels(n.c, 7.0));
}

TEST(BatchNormReference, NanPoisonsItsChannelOnly) {
  Norm n({2, 2, 3}, TestLayout::nchw);
  n.x.set(1, std::numeric_limits<double>::quiet_NaN());  // channel 0
  ASSERT_TRUE(n.train().is_ok());
  for (std::int64_t i = 0; i < n.y.count(); ++i)
    EXPECT_EQ(std::isnan(n.y.get(i)), channel_of(n.y, i) == 0) << i;
  EXPECT_TRUE(std::isnan(n.running_mean[0]) && std::isnan(n.running_var[0]));
  EXPECT_FALSE(std::isnan(n.running_mean[1]) || std::isnan(n.invstd[1]));
}

void expect_invalid(const Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), CONVJIT_STATUS_INVALID_ARGUMENT) << s.message();
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
}

TEST(BatchNormErrors, BadInputIsNamed) {
  Norm n({2, 3, 4}, TestLayout::nchw);
  n.params.epsilon = -1e-5;
  expect_invalid(n.train(), "epsilon = -1e-05 must be finite and non-negative");
  n.params.epsilon = 1e-5;
  n.params.momentum = 1.5;
  expect_invalid(n.train(), "momentum = 1.5 must lie in [0, 1]");
  n.params.momentum = 0.1;

  Norm empty({0, 3, 4}, TestLayout::nchw);
  expect_invalid(empty.train(), "x shape[0] = 0 must be positive");
  Norm single({1, 3, 1}, TestLayout::nchw);
  expect_invalid(single.train(), "more than one value per channel");
  EXPECT_TRUE(single.infer().is_ok());  // inference needs no batch statistics

  HostTensor<double> y4({2, 4, 4}, TestLayout::nchw);
  const PolicyScope reference(Policy::reference);
  expect_invalid(batchnorm_forward_training(n.params, n.x.desc(), n.x.data(), nullptr, nullptr,
                                            y4.desc(), y4.data(), nullptr, nullptr, nullptr,
                                            nullptr),
                 "y shape [2, 4, 4] must equal x shape [2, 3, 4]");
  expect_invalid(batchnorm_forward_training(n.params, n.x.desc(), n.x.data(), nullptr, nullptr,
                                            n.y.desc(), n.y.data(), n.running_mean.data(), nullptr,
                                            nullptr, nullptr),
                 "running_mean and running_var must both be given");
  expect_invalid(batchnorm_backward(n.params, true, n.x.desc(), n.x.data(), n.y.desc(),
                                    n.y.data(), nullptr, nullptr, n.mean.data(), n.invstd.data(),
                                    0, nullptr, nullptr, nullptr),
                 "grad_mask = 0x0 must select some");
  expect_invalid(batchnorm_backward(n.params, true, n.x.desc(), n.x.data(), n.y.desc(),
                                    n.y.data(), nullptr, nullptr, n.mean.data(), n.invstd.data(),
                                    CONVJIT_GRAD_INPUT, nullptr, nullptr, nullptr),
                 "dx is NULL but grad_mask selects it");
}

}  // namespace
}  // namespace convjit::test
