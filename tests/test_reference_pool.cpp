// The host reference pooling: hand-worked windows (ceil mode, padding
// counted or not, ties, NaN), adjoint identities, finite differences and
// layout invariance.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "support/policy_scope.hpp"
#include "support/problems.hpp"

namespace convjit::test {
namespace {

template <class T>
void forward(PoolTensors<T>& t, double alpha = 1, double beta = 0) {
  const PolicyScope reference(Policy::reference);
  const Status s =
      pool_forward(t.params, t.x.desc(), t.x.data(), t.y.desc(), t.y.data(), alpha, beta);
  ASSERT_TRUE(s.is_ok()) << s.message();
}

template <class T>
void backward(PoolTensors<T>& t, const HostTensor<T>& dy, HostTensor<T>& dx, double alpha = 1,
              double beta = 0) {
  const PolicyScope reference(Policy::reference);
  const Status s =
      pool_backward(t.params, t.x.desc(), t.x.data(), dy.desc(), dy.data(), dx.data(), alpha, beta);
  ASSERT_TRUE(s.is_ok()) << s.message();
}

PoolTensors<double> pool1d(const std::vector<double>& x, std::int64_t window, std::int64_t stride,
                           std::int64_t pad, convjit_pool_mode_t mode, bool ceil,
                           std::int64_t dilation = 1) {
  PoolCase c{1,        1,          {static_cast<std::int64_t>(x.size())},
             {window}, {stride},   {pad},
             {pad},    {dilation}, mode,
             ceil};
  auto t = make_pool_tensors<double>(c);
  for (std::size_t i = 0; i < x.size(); ++i) t.x.set(static_cast<std::int64_t>(i), x[i]);
  forward(t);
  return t;
}

std::vector<double> pool1d_values(const std::vector<double>& x, std::int64_t window,
                                  std::int64_t stride, std::int64_t pad, convjit_pool_mode_t mode,
                                  bool ceil) {
  return pool1d(x, window, stride, pad, mode, ceil).y.values();
}

// x = [1, 2, 3, 4], window 3, stride 2, pad 1.  Floor: windows [-1,2) and
// [1,4).  Ceil adds [3,6), which starts inside the input; index 4 is
// padding and index 5 lies beyond the padded input.
TEST(PoolHandWorked, FloorAndCeilWindowsInEveryMode) {
  const std::vector<double> x{1, 2, 3, 4};
  EXPECT_EQ(pool1d_values(x, 3, 2, 1, CONVJIT_POOL_MAX, false), (std::vector<double>{2, 4}));
  EXPECT_EQ(pool1d_values(x, 3, 2, 1, CONVJIT_POOL_MAX, true), (std::vector<double>{2, 4, 4}));
  EXPECT_EQ(pool1d_values(x, 3, 2, 1, CONVJIT_POOL_AVG_EXCLUDE_PAD, true),
            (std::vector<double>{1.5, 3, 4}));
  // Include-pad divides by the window clipped to the padded input: 3, 3, 2.
  EXPECT_EQ(pool1d_values(x, 3, 2, 1, CONVJIT_POOL_AVG_INCLUDE_PAD, true),
            (std::vector<double>{1, 3, 2}));
}

TEST(PoolHandWorked, CeilModeDropsAWindowStartingInTheEndPadding) {
  // in 5, window 2, stride 2, pad 1: ceil gives 4 outputs, but the 4th
  // would start at 5 = in + pad_begin - 1 + 1, inside the end padding.
  auto t = pool1d({1, 2, 3, 4, 5}, 2, 2, 1, CONVJIT_POOL_MAX, true);
  EXPECT_EQ(t.y.values(), (std::vector<double>{1, 3, 5}));
}

TEST(PoolHandWorked, MaxTiesGoToTheFirstElementInWindowOrder) {
  auto t = pool1d({3, 3, 1}, 3, 1, 0, CONVJIT_POOL_MAX, false);
  HostTensor<double> dy = t.y, dx = t.x;
  dy.fill(1);
  backward(t, dy, dx);
  EXPECT_EQ(dx.values(), (std::vector<double>{1, 0, 0}));
}

TEST(PoolHandWorked, MaxTiesIn2DFollowRowMajorWindowOrder) {
  PoolCase c{1, 1, {2, 2}, {2, 2}};
  auto t = make_pool_tensors<double>(c);
  for (std::int64_t i = 0; i < 4; ++i) t.x.set(i, i == 0 ? 1 : 5);  // ties at (0,1), (1,0), (1,1)
  HostTensor<double> dy = t.y, dx = t.x;
  dy.fill(2);
  backward(t, dy, dx);
  EXPECT_EQ(dx.values(), (std::vector<double>{0, 2, 0, 0}));
}

TEST(PoolHandWorked, MaxPropagatesTheFirstNaN) {
  auto t = pool1d({1, kNaN, 5, kNaN}, 4, 1, 0, CONVJIT_POOL_MAX, false);
  EXPECT_TRUE(std::isnan(t.y.get(0)));
  HostTensor<double> dy = t.y, dx = t.x;
  dy.fill(1);
  backward(t, dy, dx);
  EXPECT_EQ(dx.get(0), 0);
  EXPECT_EQ(dx.get(1), 1);
  EXPECT_EQ(dx.get(2), 0);
  EXPECT_EQ(dx.get(3), 0);
}

TEST(PoolHandWorked, DilatedMaxSkipsElements) {
  // Window 2 with dilation 2 over [5, 9, 1, 7]: max(5,1) and max(9,7).
  EXPECT_EQ(pool1d({5, 9, 1, 7}, 2, 1, 0, CONVJIT_POOL_MAX, false, 2).y.values(),
            (std::vector<double>{5, 9}));
}

TEST(PoolHandWorked, AverageBackwardSharesByTheDivisor) {
  auto t = pool1d({1, 2, 3, 4}, 3, 2, 1, CONVJIT_POOL_AVG_INCLUDE_PAD, false);
  HostTensor<double> dy = t.y, dx = t.x;
  dy.set(0, 3), dy.set(1, 6);
  backward(t, dy, dx);
  // Window 0 covers x0, x1 (and padding), divisor 3; window 1 covers x1..x3.
  EXPECT_EQ(dx.values(), (std::vector<double>{1, 1 + 2, 2, 2}));
}

// Issue 15, item 6: ONNX's pads up to the window less one (its node tests
// pad a window of 3 by 2).  x = [1, 2, 3], window 3, pad 2: five windows,
// starting at -2 .. 2; the outer ones hold one input element and two of
// padding.
TEST(PoolHandWorked, PaddingUpToTheWindowLessOne) {
  const std::vector<double> x{1, 2, 3};
  EXPECT_EQ(pool1d_values(x, 3, 1, 2, CONVJIT_POOL_MAX, false),
            (std::vector<double>{1, 2, 3, 3, 3}));
  EXPECT_EQ(pool1d_values(x, 3, 1, 2, CONVJIT_POOL_AVG_EXCLUDE_PAD, false),
            (std::vector<double>{1, 1.5, 2, 2.5, 3}));
  const std::vector<double> include_pad = pool1d_values(x, 3, 1, 2, CONVJIT_POOL_AVG_INCLUDE_PAD,
                                                        false);
  const std::vector<double> thirds{1.0 / 3, 1, 2, 5.0 / 3, 1};
  ASSERT_EQ(include_pad.size(), thirds.size());
  for (std::size_t i = 0; i < thirds.size(); ++i) EXPECT_DOUBLE_EQ(include_pad[i], thirds[i]) << i;
  auto t = pool1d(x, 3, 1, 2, CONVJIT_POOL_MAX, false);
  HostTensor<double> dy = t.y, dx = t.x;
  dy.fill(1);
  backward(t, dy, dx);
  EXPECT_EQ(dx.values(), (std::vector<double>{1, 1, 3}));
}

TEST(PoolHandWorked, GlobalAveragePool) {
  PoolCase c{2, 3, {4, 5}, {4, 5}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, CONVJIT_POOL_AVG_EXCLUDE_PAD};
  auto t = make_pool_tensors<double>(c);
  ASSERT_EQ(t.y.count(), 6);
  for (std::int64_t i = 0; i < t.x.count(); ++i) t.x.set(i, static_cast<double>(i));
  forward(t);
  for (std::int64_t plane = 0; plane < 6; ++plane)
    EXPECT_DOUBLE_EQ(t.y.get(plane), 20.0 * static_cast<double>(plane) + 9.5);
}

TEST(PoolHandWorked, ThreeDimensionalMax) {
  PoolCase c{1, 1, {2, 2, 2}, {2, 2, 2}};
  auto t = make_pool_tensors<double>(c);
  for (std::int64_t i = 0; i < 8; ++i) t.x.set(i, static_cast<double>((i * 5) % 8));
  forward(t);
  EXPECT_EQ(t.y.values(), (std::vector<double>{7}));
}

// ⟨pool(x), dy⟩ = ⟨x, pool_bwd(x, dy)⟩ holds for average pooling (linear)
// and max pooling (a selection matrix, fixed by x).
void check_adjoint(const PoolCase& c, std::mt19937& rng) {
  auto t = make_pool_tensors<double>(c);
  t.x.fill_random(rng);
  HostTensor<double> dy = t.y, dx = t.x;
  dy.fill_random(rng);
  t.y.fill(kNaN), dx.fill(kNaN);
  forward(t);
  backward(t, dy, dx);
  for (double v : t.y.values()) ASSERT_TRUE(std::isfinite(v));
  for (double v : dx.values()) ASSERT_TRUE(std::isfinite(v));
  EXPECT_NEAR(dot(t.y, dy), dot(t.x, dx), 1e-10 * static_cast<double>(t.x.count()));
}

class PoolAdjoint : public ::testing::TestWithParam<std::tuple<int, convjit_pool_mode_t>> {};

TEST_P(PoolAdjoint, IdentityHoldsOnRandomProblems) {
  const auto [spatial, mode] = GetParam();
  std::mt19937 rng(300 + static_cast<unsigned>(spatial * 10 + mode));
  for (int i = 0; i < 40; ++i) check_adjoint(random_pool_case(rng, spatial, mode), rng);
}

INSTANTIATE_TEST_SUITE_P(DimsModes, PoolAdjoint,
                         ::testing::Combine(::testing::Values(1, 2, 3),
                                            ::testing::Values(CONVJIT_POOL_MAX,
                                                              CONVJIT_POOL_AVG_EXCLUDE_PAD,
                                                              CONVJIT_POOL_AVG_INCLUDE_PAD)));

TEST(PoolFiniteDifferences, GradientMatchesForwardPerturbations) {
  std::mt19937 rng(31);
  for (auto mode : {CONVJIT_POOL_MAX, CONVJIT_POOL_AVG_EXCLUDE_PAD, CONVJIT_POOL_AVG_INCLUDE_PAD}) {
    for (int spatial = 1; spatial <= 3; ++spatial) {
      auto t = make_pool_tensors<double>(random_pool_case(rng, spatial, mode));
      t.x.fill_random(rng);  // distinct values almost surely: max is differentiable
      HostTensor<double> dy = t.y, dx = t.x;
      dy.fill_random(rng);
      backward(t, dy, dx);
      const double eps = 1e-7;
      for (std::int64_t i = 0; i < t.x.count(); i += 1 + t.x.count() / 13) {
        const double v = t.x.get(i);
        t.x.set(i, v + eps);
        forward(t);
        const double up = dot(t.y, dy);
        t.x.set(i, v - eps);
        forward(t);
        const double down = dot(t.y, dy);
        t.x.set(i, v);
        EXPECT_NEAR((up - down) / (2 * eps), dx.get(i), 1e-6) << "dx[" << i << "]";
      }
    }
  }
}

TEST(PoolLayouts, NchwNhwcAndHaloGiveIdenticalResults) {
  std::mt19937 rng(41);
  for (auto mode : {CONVJIT_POOL_MAX, CONVJIT_POOL_AVG_EXCLUDE_PAD, CONVJIT_POOL_AVG_INCLUDE_PAD}) {
    for (int spatial = 1; spatial <= 3; ++spatial) {
      PoolCase c = random_pool_case(rng, spatial, mode);
      const unsigned seed = static_cast<unsigned>(rng());
      std::vector<std::vector<double>> y, dx;
      for (TestLayout layout : {TestLayout::nchw, TestLayout::nhwc, TestLayout::halo}) {
        c.layout = layout;
        auto t = make_pool_tensors<float>(c);
        HostTensor<float> dy = t.y, gx = t.x;
        std::mt19937 data(seed);
        std::uniform_real_distribution<double> dist(-1, 1);
        for (auto* tensor : {&t.x, &dy})
          for (std::int64_t i = 0; i < tensor->count(); ++i) tensor->set(i, dist(data));
        forward(t);
        backward(t, dy, gx);
        y.push_back(t.y.values()), dx.push_back(gx.values());
      }
      EXPECT_EQ(y[0], y[1]);
      EXPECT_EQ(y[0], y[2]);
      EXPECT_EQ(dx[0], dx[1]);
      EXPECT_EQ(dx[0], dx[2]);
    }
  }
}

TEST(PoolScaling, AlphaBetaAndBetaZeroNeverReadsTheOutput) {
  std::mt19937 rng(51);
  auto t = make_pool_tensors<double>({1, 2, {6, 6}, {3, 3}, {2, 2}, {1, 1}});
  t.x.fill_random(rng);
  forward(t);
  const auto plain = t.y.values();
  t.y.fill(kNaN);
  forward(t);
  EXPECT_EQ(t.y.values(), plain);
  t.y.fill(2.0);
  forward(t, 0.5, 3.0);
  for (std::size_t i = 0; i < plain.size(); ++i)
    EXPECT_NEAR(t.y.values()[i], 0.5 * plain[i] + 6, 1e-12);
}

// Max pooling is exact in any dtype; averages add f32 summation and
// division (relative error ~ window * 2^-24) and one rounding to storage:
// half an ulp, 2^-11 for f16 and 2^-8 for bf16.  We allow 2 ulps relative to
// the magnitude average (the sum of |x| over the divisor), which also covers
// cancellation.
template <class T>
void check_pool_low_precision(double ulp) {
  std::mt19937 rng(61);
  for (auto mode : {CONVJIT_POOL_MAX, CONVJIT_POOL_AVG_EXCLUDE_PAD, CONVJIT_POOL_AVG_INCLUDE_PAD}) {
    const PoolCase c = random_pool_case(rng, 2, mode);
    auto low = make_pool_tensors<T>(c);
    auto exact = make_pool_tensors<double>(c);
    auto magnitude = make_pool_tensors<double>(c);
    low.x.fill_random(rng);
    for (std::int64_t i = 0; i < low.x.count(); ++i) {
      exact.x.set(i, low.x.get(i));
      magnitude.x.set(i, std::abs(low.x.get(i)));
    }
    forward(low), forward(exact), forward(magnitude);
    for (std::int64_t i = 0; i < exact.y.count(); ++i) {
      const double ref = exact.y.get(i);
      if (mode == CONVJIT_POOL_MAX) {
        EXPECT_EQ(low.y.get(i), ref);
      } else {
        EXPECT_NEAR(low.y.get(i), ref, 2 * ulp * std::abs(magnitude.y.get(i)));
      }
    }
  }
}

TEST(PoolDtypes, Float16MatchesF64WithinStatedTolerance) {
  check_pool_low_precision<Half>(0x1p-11);
}
TEST(PoolDtypes, BFloat16MatchesF64WithinStatedTolerance) {
  check_pool_low_precision<BFloat16>(0x1p-8);
}

}  // namespace
}  // namespace convjit::test
