// ChannelSums (dispatcher/backends/onednn/channel_sums.hpp), the host
// batchnorm's f64 reductions, against a plain element-by-element sum: in
// channels-last and channel-plane layouts, with padded rows (a halo), a W
// stride of 2, runs that are not a multiple of its four lanes, slices
// smaller than a row, with and without a gradient, in f32 and bf16.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>
#include <vector>

#include "dispatcher/backends/onednn/channel_sums.hpp"
#include "dispatcher/descriptor/half_precision.hpp"

namespace convjit {
namespace {

struct SumsLayout {
  const char* name;
  std::array<std::int64_t, 5> dims;  // N, C, D, H, W
  std::array<std::int64_t, 5> strides;
};

std::int64_t span(const SumsLayout& l) {
  std::int64_t last = 0;
  for (int i = 0; i < 5; ++i) last += (l.dims[i] - 1) * l.strides[i];
  return last + 1;
}

// (first, second) of channel c, summed one element at a time.
std::pair<double, double> plain_sums(const SumsLayout& l, const std::vector<float>& x,
                                     const float* g, double center, std::int64_t c) {
  double s1 = 0, s2 = 0;
  for (std::int64_t n = 0; n < l.dims[0]; ++n)
    for (std::int64_t d = 0; d < l.dims[2]; ++d)
      for (std::int64_t h = 0; h < l.dims[3]; ++h)
        for (std::int64_t w = 0; w < l.dims[4]; ++w) {
          const std::int64_t at = n * l.strides[0] + c * l.strides[1] + d * l.strides[2] +
                                  h * l.strides[3] + w * l.strides[4];
          const double u = x[static_cast<std::size_t>(at)] - center;
          const double weight = g == nullptr ? u : g[at];
          s1 += weight, s2 += weight * u;
        }
  return {s1, s2};
}

const SumsLayout kLayouts[] = {
    // W = 7: runs of 7 (one block of four lanes and three left over).
    {"NCHW", {2, 3, 1, 5, 7}, {105, 35, 35, 7, 1}},
    {"NHWC", {2, 3, 1, 5, 7}, {105, 1, 105, 21, 3}},
    {"NCHW halo", {2, 3, 1, 5, 7}, {3 * 7 * 10, 7 * 10, 7 * 10, 10, 1}},
    {"NHWC halo", {2, 3, 1, 5, 7}, {5 * 12 * 3, 1, 0, 12 * 3, 3}},
    {"W stride 2", {1, 2, 2, 3, 5}, {2 * 2 * 3 * 10, 2 * 3 * 10, 3 * 10, 10, 2}},
    {"one pixel", {1, 4, 1, 1, 1}, {4, 1, 1, 1, 1}},
};

TEST(ChannelSums, MatchPlainSumsInEveryLayoutWithAndWithoutAGradient) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  for (const SumsLayout& l : kLayouts) {
    SCOPED_TRACE(l.name);
    std::vector<float> x(static_cast<std::size_t>(span(l))), g(x.size());
    for (float& v : x) v = uniform(rng);
    for (float& v : g) v = uniform(rng);
    std::vector<double> center;
    for (std::int64_t c = 0; c < l.dims[1]; ++c) center.push_back(0.25 * static_cast<double>(c));
    ChannelSums sums(View5{l.dims, l.strides});
    const float* gradients[] = {nullptr, g.data()};
    for (const float* gradient : gradients) {
      sums.compute(DataType::f32, x.data(), gradient, center.data());
      for (std::int64_t c = 0; c < l.dims[1]; ++c) {
        const auto [s1, s2] = plain_sums(l, x, gradient, center[c], c);
        // f64 sums of at most 70 terms of magnitude <= 8, in another order.
        EXPECT_NEAR(sums.first(c), s1, 1e-12) << "channel " << c;
        EXPECT_NEAR(sums.second(c), s2, 1e-12) << "channel " << c;
      }
    }
  }
}

TEST(ChannelSums, Bf16ValuesAreWidenedExactly) {
  const SumsLayout& l = kLayouts[0];
  std::vector<BFloat16> x(static_cast<std::size_t>(span(l)));
  std::vector<float> widened(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    x[i] = float_to_bf16(static_cast<float>(i % 13) * 0.125f - 0.75f);
    widened[i] = bf16_to_float(x[i]);
  }
  const std::vector<double> center(3, 0.5);
  ChannelSums sums(View5{l.dims, l.strides});
  sums.compute(DataType::bf16, x.data(), nullptr, center.data());
  for (std::int64_t c = 0; c < 3; ++c) {
    const auto [s1, s2] = plain_sums(l, widened, nullptr, 0.5, c);
    EXPECT_EQ(sums.first(c), s1);  // exact: multiples of 1/64, few of them
    EXPECT_EQ(sums.second(c), s2);
  }
}

}  // namespace
}  // namespace convjit
