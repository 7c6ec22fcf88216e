// The host reference convolution, checked by the adjoint identities, finite
// differences, hand-worked cases, layout invariance and alpha/beta rules.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/policy_scope.hpp"
#include "support/problems.hpp"

namespace convjit::test {
namespace {

template <class T>
void forward(ConvTensors<T>& t, double alpha = 1, double beta = 0) {
  const PolicyScope reference(Policy::reference);
  const Status s = conv_forward(t.params, t.x.desc(), t.x.data(), t.w.desc(), t.w.data(),
                                t.y.desc(), t.y.data(), alpha, beta);
  ASSERT_TRUE(s.is_ok()) << s.message();
}

template <class T>
void backward_data(ConvTensors<T>& t, const HostTensor<T>& dy, HostTensor<T>& dx) {
  const PolicyScope reference(Policy::reference);
  const Status s = conv_backward_data(t.params, dy.desc(), dy.data(), t.w.desc(), t.w.data(),
                                      dx.desc(), dx.data());
  ASSERT_TRUE(s.is_ok()) << s.message();
}

template <class T>
void backward_filter(ConvTensors<T>& t, const HostTensor<T>& dy, HostTensor<T>& dw) {
  const PolicyScope reference(Policy::reference);
  const Status s = conv_backward_filter(t.params, t.x.desc(), t.x.data(), dy.desc(), dy.data(),
                                        dw.desc(), dw.data());
  ASSERT_TRUE(s.is_ok()) << s.message();
}

void expect_all_finite(const std::vector<double>& values, const char* what) {
  for (std::size_t i = 0; i < values.size(); ++i)
    ASSERT_TRUE(std::isfinite(values[i])) << what << "[" << i << "] was not written";
}

// ⟨conv(x,w), dy⟩ = ⟨x, bwddata(dy,w)⟩ = ⟨w, bwdfilt(x,dy)⟩ in f64.  Outputs
// are poisoned with NaN first: an unwritten element or a beta=0 read of
// the old value would show up as NaN.
void check_adjoint(const ConvCase& c, std::mt19937& rng) {
  SCOPED_TRACE(c.describe());
  auto t = make_conv_tensors<double>(c);
  t.x.fill_random(rng);
  t.w.fill_random(rng);
  HostTensor<double> dy = t.y, dx = t.x, dw = t.w;
  dy.fill_random(rng);
  t.y.fill(kNaN), dx.fill(kNaN), dw.fill(kNaN);
  forward(t);
  backward_data(t, dy, dx);
  backward_filter(t, dy, dw);
  expect_all_finite(t.y.values(), "y");
  expect_all_finite(dx.values(), "dx");
  expect_all_finite(dw.values(), "dw");
  const double fwd = dot(t.y, dy), data = dot(t.x, dx), filt = dot(t.w, dw);
  // f64 sums of at most ~1e4 products of magnitude <= 1: rounding stays far
  // below 1e-10 relative to the number of terms.
  const double tol = 1e-10 * static_cast<double>(t.y.count() + t.x.count() + t.w.count());
  EXPECT_NEAR(fwd, data, tol);
  EXPECT_NEAR(fwd, filt, tol);
}

class ConvAdjoint : public ::testing::TestWithParam<int> {};

TEST_P(ConvAdjoint, IdentitiesHoldOnRandomProblems) {
  const int spatial = GetParam();
  std::mt19937 rng(1000 + static_cast<unsigned>(spatial));
  for (int i = 0; i < 60; ++i) check_adjoint(random_conv_case(rng, spatial), rng);
}

INSTANTIATE_TEST_SUITE_P(Dims, ConvAdjoint, ::testing::Values(1, 2, 3), [](const auto& param_info) {
  return std::to_string(param_info.param) + "d";
});

TEST(ConvAdjoint, ConfigurationFamilies) {
  std::mt19937 rng(7);
  const std::vector<ConvCase> families = {
      {2, 4, 6, 1, {7, 6}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},    // plain 3x3
      {1, 6, 4, 2, {9, 8}, {3, 2}, {2, 3}, {2, 0}, {0, 1}, {1, 1}},    // groups, asym pad
      {2, 5, 5, 5, {8, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}},    // depthwise
      {1, 3, 2, 1, {11, 10}, {3, 2}, {1, 2}, {2, 1}, {1, 0}, {2, 3}},  // dilation
      {1, 4, 8, 1, {5, 5}, {1, 1}, {2, 2}, {0, 0}, {0, 0}, {1, 1}},    // strided 1x1
      {2, 2, 3, 1, {13}, {4}, {3}, {3}, {1}, {1}},                     // 1D
      {1, 2, 4, 2, {5, 4, 6}, {3, 2, 3}, {1, 2, 2}, {1, 1, 2}, {1, 0, 0}, {1, 1, 2}},  // 3D
      {1, 3, 3, 1, {7, 7}, {7, 7}, {1, 1}, {3, 3}, {3, 3}, {1, 1}},  // large window
      {2, 140, 4, 2, {4, 5}, {3, 3}, {1, 2}, {1, 1}, {1, 0}, {1, 1}},  // 70 channels per group:
                                                                      // bwdfilt's blocks of 32
  };
  for (ConvCase c : families)
    for (TestLayout layout : {TestLayout::nchw, TestLayout::nhwc, TestLayout::halo}) {
      c.layout = layout;
      check_adjoint(c, rng);
    }
}

// Central differences of L(x, w, b) = ⟨conv(x, w) + b, dy⟩.  L is linear in
// each argument, so the difference quotient is exact up to f64 rounding.
TEST(ConvFiniteDifferences, GradientsMatchForwardPerturbations) {
  std::mt19937 rng(11);
  for (int spatial = 1; spatial <= 3; ++spatial) {
    const ConvCase c = random_conv_case(rng, spatial);
    SCOPED_TRACE(c.describe());
    auto t = make_conv_tensors<double>(c);
    t.x.fill_random(rng), t.w.fill_random(rng);
    HostTensor<double> dy = t.y, dx = t.x, dw = t.w;
    dy.fill_random(rng);
    backward_data(t, dy, dx);
    backward_filter(t, dy, dw);
    std::vector<double> db(static_cast<std::size_t>(c.filters));
    ASSERT_TRUE(conv_backward_bias(dy.desc(), dy.data(), db.data()).is_ok());

    auto loss = [&] {
      forward(t);
      return dot(t.y, dy);
    };
    const double eps = 1e-3;
    auto central = [&](HostTensor<double>& tensor, std::int64_t i) {
      const double v = tensor.get(i);
      tensor.set(i, v + eps);
      const double up = loss();
      tensor.set(i, v - eps);
      const double down = loss();
      tensor.set(i, v);
      return (up - down) / (2 * eps);
    };
    for (std::int64_t i = 0; i < t.x.count(); i += 1 + t.x.count() / 17)
      EXPECT_NEAR(central(t.x, i), dx.get(i), 1e-8) << "dx[" << i << "]";
    for (std::int64_t i = 0; i < t.w.count(); i += 1 + t.w.count() / 17)
      EXPECT_NEAR(central(t.w, i), dw.get(i), 1e-8) << "dw[" << i << "]";
    // dL/db[k] = sum of dy over batch and space for filter k.
    const std::int64_t per_filter = dy.count() / (c.batch * c.filters);
    for (std::int64_t k = 0; k < c.filters; ++k) {
      double expected = 0;
      for (std::int64_t n = 0; n < c.batch; ++n)
        for (std::int64_t s = 0; s < per_filter; ++s)
          expected += dy.get((n * c.filters + k) * per_filter + s);
      EXPECT_NEAR(db[static_cast<std::size_t>(k)], expected, 1e-12);
    }
  }
}

// ---- hand-worked cases ------------------------------------------------------

std::vector<double> conv1d(std::vector<double> x, std::vector<double> w, std::int64_t stride,
                           std::int64_t pad_begin, std::int64_t pad_end, std::int64_t dilation) {
  ConvCase c{1,
             1,
             1,
             1,
             {static_cast<std::int64_t>(x.size())},
             {static_cast<std::int64_t>(w.size())},
             {stride},
             {pad_begin},
             {pad_end},
             {dilation}};
  auto t = make_conv_tensors<double>(c);
  for (std::size_t i = 0; i < x.size(); ++i) t.x.set(static_cast<std::int64_t>(i), x[i]);
  for (std::size_t i = 0; i < w.size(); ++i) t.w.set(static_cast<std::int64_t>(i), w[i]);
  forward(t);
  return t.y.values();
}

TEST(ConvHandWorked, SymmetricPaddingEdgeFilter) {
  // y[i] = x[i-1] - x[i+1] with zero padding.
  EXPECT_EQ(conv1d({1, 2, 3, 4, 5}, {1, 0, -1}, 1, 1, 1, 1),
            (std::vector<double>{-2, -2, -2, -2, 4}));
}

TEST(ConvHandWorked, AsymmetricPadding) {
  // Two zeros before, none after: windows (0,0,1) (0,1,2) (1,2,3).
  EXPECT_EQ(conv1d({1, 2, 3}, {1, 1, 1}, 1, 2, 0, 1), (std::vector<double>{1, 3, 6}));
}

TEST(ConvHandWorked, Dilation) {
  EXPECT_EQ(conv1d({1, 2, 3, 4, 5}, {1, 1}, 1, 0, 0, 2), (std::vector<double>{4, 6, 8}));
}

TEST(ConvHandWorked, Stride) {
  EXPECT_EQ(conv1d({1, 2, 3, 4, 5, 6}, {1, 1}, 2, 0, 0, 1), (std::vector<double>{3, 7, 11}));
  // The trailing element that no window reaches is dropped (floor rule).
  EXPECT_EQ(conv1d({1, 2, 3, 4, 5, 6, 7}, {1, 1}, 2, 0, 0, 1), (std::vector<double>{3, 7, 11}));
}

TEST(ConvHandWorked, Groups) {
  // Two groups of one channel each, 1x1 filters 2 and 3: y_k = w_k * x_k.
  ConvCase c{1, 2, 2, 2, {2, 2}, {1, 1}};
  auto t = make_conv_tensors<double>(c);
  for (std::int64_t i = 0; i < 8; ++i) t.x.set(i, static_cast<double>(i + 1));
  t.w.set(0, 2), t.w.set(1, 3);
  forward(t);
  EXPECT_EQ(t.y.values(), (std::vector<double>{2, 4, 6, 8, 15, 18, 21, 24}));
}

TEST(ConvHandWorked, ThreeDimensional) {
  ConvCase c{1, 1, 1, 1, {2, 2, 3}, {2, 2, 2}};
  auto t = make_conv_tensors<double>(c);
  for (std::int64_t i = 0; i < t.x.count(); ++i) t.x.set(i, static_cast<double>(i));
  t.w.fill(1);
  forward(t);
  // Windows over w in {0,1} and {1,2}: sums of the 8 corner elements.
  EXPECT_EQ(t.y.values(),
            (std::vector<double>{0 + 1 + 3 + 4 + 6 + 7 + 9 + 10, 1 + 2 + 4 + 5 + 7 + 8 + 10 + 11}));
}

TEST(ConvHandWorked, BackwardDataScattersThroughStrideAndPadding) {
  // x of 4, w = [1, 10], stride 2, pad 1: y0 = 10*x0, y1 = x1 + 10*x2, y2 = x3.
  ConvCase c{1, 1, 1, 1, {4}, {2}, {2}, {1}, {1}, {1}};
  auto t = make_conv_tensors<double>(c);
  t.w.set(0, 1), t.w.set(1, 10);
  HostTensor<double> dy = t.y, dx = t.x;
  ASSERT_EQ(dy.count(), 3);
  dy.set(0, 1), dy.set(1, 2), dy.set(2, 3);
  backward_data(t, dy, dx);
  EXPECT_EQ(dx.values(), (std::vector<double>{10, 2, 20, 3}));
}

// ---- layouts, scaling, dtypes ----------------------------------------------

TEST(ConvLayouts, NchwNhwcAndHaloGiveIdenticalResults) {
  std::mt19937 rng(5);
  for (int spatial = 1; spatial <= 3; ++spatial) {
    for (int trial = 0; trial < 6; ++trial) {
      ConvCase c = random_conv_case(rng, spatial);
      std::vector<std::vector<double>> y, dx, dw;
      std::mt19937 data_seed(static_cast<unsigned>(trial));
      const unsigned seed = static_cast<unsigned>(rng());
      for (TestLayout layout : {TestLayout::nchw, TestLayout::nhwc, TestLayout::halo}) {
        c.layout = layout;
        auto t = make_conv_tensors<float>(c);
        std::mt19937 data(seed);
        HostTensor<float> dy = t.y, gx = t.x, gw = t.w;
        // Same logical values whatever the layout.
        std::uniform_real_distribution<double> dist(-1, 1);
        for (auto* tensor : {&t.x, &t.w, &dy})
          for (std::int64_t i = 0; i < tensor->count(); ++i) tensor->set(i, dist(data));
        forward(t);
        backward_data(t, dy, gx);
        backward_filter(t, dy, gw);
        y.push_back(t.y.values()), dx.push_back(gx.values()), dw.push_back(gw.values());
      }
      SCOPED_TRACE(c.describe());
      EXPECT_EQ(y[0], y[1]);
      EXPECT_EQ(y[0], y[2]);
      EXPECT_EQ(dx[0], dx[1]);
      EXPECT_EQ(dx[0], dx[2]);
      EXPECT_EQ(dw[0], dw[1]);
      EXPECT_EQ(dw[0], dw[2]);
    }
  }
}

TEST(ConvScaling, BetaZeroNeverReadsTheOutput) {
  std::mt19937 rng(3);
  auto t = make_conv_tensors<float>({2, 3, 4, 1, {6, 6}, {3, 3}, {1, 1}, {1, 1}});
  t.x.fill_random(rng), t.w.fill_random(rng);
  forward(t);
  const auto clean = t.y.values();
  t.y.fill(kNaN);
  forward(t, 1.0, 0.0);
  EXPECT_EQ(t.y.values(), clean);
  t.y.fill(std::numeric_limits<double>::infinity());
  forward(t, 1.0, 0.0);
  EXPECT_EQ(t.y.values(), clean);
}

TEST(ConvScaling, AlphaBetaBlendWithThePreviousOutput) {
  std::mt19937 rng(4);
  auto t = make_conv_tensors<double>({1, 2, 3, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}});
  t.x.fill_random(rng), t.w.fill_random(rng);
  forward(t);
  const auto plain = t.y.values();
  t.y.fill(4.0);
  forward(t, 2.0, 0.5);
  const auto blended = t.y.values();
  for (std::size_t i = 0; i < plain.size(); ++i) EXPECT_NEAR(blended[i], 2 * plain[i] + 2.0, 1e-12);
}

TEST(ConvScaling, BackwardDirectionsHonourAlphaBeta) {
  std::mt19937 rng(6);
  auto t = make_conv_tensors<double>({1, 2, 2, 1, {5}, {3}, {1}, {1}});
  t.x.fill_random(rng), t.w.fill_random(rng);
  HostTensor<double> dy = t.y, dx = t.x, dw = t.w;
  dy.fill_random(rng);
  backward_data(t, dy, dx);
  backward_filter(t, dy, dw);
  const auto dx1 = dx.values(), dw1 = dw.values();
  dx.fill(1.0), dw.fill(1.0);
  ASSERT_TRUE(conv_backward_data(t.params, dy.desc(), dy.data(), t.w.desc(), t.w.data(), dx.desc(),
                                 dx.data(), 3.0, -1.0)
                  .is_ok());
  ASSERT_TRUE(conv_backward_filter(t.params, t.x.desc(), t.x.data(), dy.desc(), dy.data(),
                                   dw.desc(), dw.data(), 3.0, -1.0)
                  .is_ok());
  for (std::size_t i = 0; i < dx1.size(); ++i) EXPECT_NEAR(dx.values()[i], 3 * dx1[i] - 1, 1e-12);
  for (std::size_t i = 0; i < dw1.size(); ++i) EXPECT_NEAR(dw.values()[i], 3 * dw1[i] - 1, 1e-12);
}

// Low precision against an f64 run on the same (already rounded) inputs.
// Tolerance: both kernels accumulate in f32 (rel. error <= n * 2^-24 of
// the magnitude sum M = Σ|x·w|) and round once on output (half an ulp of the
// storage type: 2^-11 for f16, 2^-8 for bf16).  We allow 2 output ulps plus
// 1e-5·M for accumulation.
template <class T>
void check_low_precision(double output_ulp) {
  std::mt19937 rng(21);
  for (int trial = 0; trial < 12; ++trial) {
    const ConvCase c = random_conv_case(rng, 1 + trial % 3);
    SCOPED_TRACE(c.describe());
    auto low = make_conv_tensors<T>(c);
    auto exact = make_conv_tensors<double>(c);
    auto magnitude = make_conv_tensors<double>(c);
    low.x.fill_random(rng), low.w.fill_random(rng);
    for (std::int64_t i = 0; i < low.x.count(); ++i) {
      exact.x.set(i, low.x.get(i));
      magnitude.x.set(i, std::abs(low.x.get(i)));
    }
    for (std::int64_t i = 0; i < low.w.count(); ++i) {
      exact.w.set(i, low.w.get(i));
      magnitude.w.set(i, std::abs(low.w.get(i)));
    }
    forward(low), forward(exact), forward(magnitude);
    for (std::int64_t i = 0; i < low.y.count(); ++i) {
      const double ref = exact.y.get(i);
      const double tol = 2 * output_ulp * std::abs(ref) + 1e-5 * magnitude.y.get(i) + 1e-30;
      ASSERT_NEAR(low.y.get(i), ref, tol) << "y[" << i << "]";
    }
  }
}

TEST(ConvDtypes, Float16MatchesF64WithinStatedTolerance) { check_low_precision<Half>(0x1p-11); }
TEST(ConvDtypes, BFloat16MatchesF64WithinStatedTolerance) { check_low_precision<BFloat16>(0x1p-8); }
TEST(ConvDtypes, Float32MatchesF64WithinStatedTolerance) { check_low_precision<float>(0x1p-24); }

// ---- combined backward -------------------------------------------------------

TEST(ConvBackwardCombined, ComputesExactlyTheRequestedOutputs) {
  std::mt19937 rng(8);
  const ConvCase c{2, 4, 6, 2, {6, 5}, {3, 3}, {1, 2}, {1, 1}, {1, 0}, {1, 1}};
  auto t = make_conv_tensors<double>(c);
  t.x.fill_random(rng), t.w.fill_random(rng);
  HostTensor<double> dy = t.y, dx_ref = t.x, dw_ref = t.w;
  dy.fill_random(rng);
  backward_data(t, dy, dx_ref);
  backward_filter(t, dy, dw_ref);
  std::vector<double> db_ref(6);
  ASSERT_TRUE(conv_backward_bias(dy.desc(), dy.data(), db_ref.data()).is_ok());

  for (unsigned mask = 0; mask < 8; ++mask) {
    SCOPED_TRACE("mask " + std::to_string(mask));
    const double sentinel = -12345.0;
    HostTensor<double> dx = t.x, dw = t.w;
    dx.fill(sentinel), dw.fill(sentinel);
    std::vector<double> db(6, sentinel);
    const Status s = conv_backward(t.params, t.x.desc(), t.x.data(), t.w.desc(), t.w.data(),
                                   dy.desc(), dy.data(), mask, dx.data(), dw.data(), db.data());
    ASSERT_TRUE(s.is_ok()) << s.message();
    EXPECT_EQ(dx.values(), (mask & CONVJIT_GRAD_INPUT)
                               ? dx_ref.values()
                               : std::vector<double>(dx.values().size(), sentinel));
    EXPECT_EQ(dw.values(), (mask & CONVJIT_GRAD_WEIGHT)
                               ? dw_ref.values()
                               : std::vector<double>(dw.values().size(), sentinel));
    EXPECT_EQ(db, (mask & CONVJIT_GRAD_BIAS) ? db_ref : std::vector<double>(6, sentinel));
  }
}

TEST(ConvBackwardCombined, UnrequestedOutputsMayBeNull) {
  std::mt19937 rng(9);
  auto t = make_conv_tensors<float>({1, 2, 2, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}});
  HostTensor<float> dy = t.y, dx = t.x;
  dy.fill_random(rng), t.w.fill_random(rng);
  const Status s = conv_backward(t.params, t.x.desc(), nullptr, t.w.desc(), t.w.data(), dy.desc(),
                                 dy.data(), CONVJIT_GRAD_INPUT, dx.data(), nullptr, nullptr);
  EXPECT_TRUE(s.is_ok()) << s.message();
}

TEST(ConvBackwardCombined, ARequestedButNullOutputWritesNothing) {
  std::mt19937 rng(10);
  auto t = make_conv_tensors<float>({1, 2, 2, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}});
  HostTensor<float> dy = t.y, dx = t.x;
  dy.fill_random(rng), t.w.fill_random(rng), t.x.fill_random(rng);
  dx.fill(7.0);
  const Status s =
      conv_backward(t.params, t.x.desc(), t.x.data(), t.w.desc(), t.w.data(), dy.desc(), dy.data(),
                    CONVJIT_GRAD_INPUT | CONVJIT_GRAD_WEIGHT, dx.data(), nullptr, nullptr);
  EXPECT_EQ(s.code(), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.message().find("dw"), std::string::npos) << s.message();
  for (double v : dx.values()) EXPECT_EQ(v, 7.0);
}

// Issue 15, item 5: dy is an input, as in the standalone calls.  PyTorch's
// gradient of y.sum() is an expanded tensor: one element, zero strides.
TEST(ConvBackwardCombined, AZeroStrideDyIsAnInputLikeAnyOther) {
  std::mt19937 rng(11);
  auto t = make_conv_tensors<double>({2, 4, 6, 2, {6, 5}, {3, 3}, {1, 2}, {1, 1}, {1, 0}});
  t.x.fill_random(rng), t.w.fill_random(rng);
  HostTensor<double> ones = t.y, dx_ref = t.x, dw_ref = t.w, dx = t.x, dw = t.w;
  ones.fill(1.0);
  backward_data(t, ones, dx_ref);
  backward_filter(t, ones, dw_ref);
  const convjit_tensor_desc_t& y = t.y.desc();
  const TensorDesc expanded = TensorDesc::strided(
      CONVJIT_DTYPE_F64, {y.dims[0], y.dims[1], y.dims[2], y.dims[3]}, {0, 0, 0, 0});
  const double one = 1.0;
  std::vector<double> db(6, -1.0);
  const Status s = conv_backward(t.params, t.x.desc(), t.x.data(), t.w.desc(), t.w.data(),
                                 expanded, &one, CONVJIT_GRAD_INPUT | CONVJIT_GRAD_WEIGHT |
                                                     CONVJIT_GRAD_BIAS,
                                 dx.data(), dw.data(), db.data());
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_EQ(dx.values(), dx_ref.values());
  EXPECT_EQ(dw.values(), dw_ref.values());
  const double per_channel = static_cast<double>(y.dims[0] * y.dims[2] * y.dims[3]);
  EXPECT_EQ(db, std::vector<double>(6, per_channel));
}

// Issue 15, item 5: every requested output is checked in its own role
// before any is written; the message names it.
TEST(ConvBackwardCombined, AnInvalidOutputIsFoundBeforeAnyIsWritten) {
  std::mt19937 rng(12);
  auto t = make_conv_tensors<float>({1, 2, 2, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}});
  HostTensor<float> dy = t.y, dx = t.x, dw = t.w;
  dy.fill_random(rng), t.w.fill_random(rng), t.x.fill_random(rng);
  dx.fill(7.0), dw.fill(7.0);
  const TensorDesc overlapping = TensorDesc::strided(CONVJIT_DTYPE_F32, {2, 2, 3, 3}, {0, 9, 3, 1});
  const Status s = conv_backward(t.params, t.x.desc(), t.x.data(), overlapping, t.w.data(),
                                 dy.desc(), dy.data(), CONVJIT_GRAD_INPUT | CONVJIT_GRAD_WEIGHT,
                                 dx.data(), dw.data(), nullptr);
  EXPECT_EQ(s.code(), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.message().find("conv2d bwdfilt: output dw strides [0, 9, 3, 1] make elements"),
            std::string::npos)
      << s.message();
  for (double v : dx.values()) EXPECT_EQ(v, 7.0);
  const TensorDesc overlapping_dx =
      TensorDesc::strided(CONVJIT_DTYPE_F32, {1, 2, 4, 4}, {32, 16, 2, 1});
  const Status dx_role = conv_backward(t.params, overlapping_dx, t.x.data(), t.w.desc(),
                                       t.w.data(), dy.desc(), dy.data(), CONVJIT_GRAD_INPUT,
                                       dx.data(), nullptr, nullptr);
  EXPECT_NE(dx_role.message().find("conv2d bwddata: output dx strides"), std::string::npos)
      << dx_role.message();
}

}  // namespace
}  // namespace convjit::test
