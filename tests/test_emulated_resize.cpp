// The JIT's resize kernels (resize/resize_{fwd,bwd}{,_vector}.cuh) in the
// host emulator against the reference: every mode and coordinate rule,
// 1D/2D/3D, up and down by integer and fractional factors (a given scale in
// some), odd sizes and channel counts, NCHW, NHWC and halo layouts, batch 1,
// alpha/beta, in both variants; YOLO11n's upsamples; a NaN's spread; and
// the same dx on every run (the backward gathers, without atomics).
// Outputs start poisoned; the emulator fails a launch on any stray access
// or race.  Tolerance: the dtype's (each output blends at most 8 taps;
// each input gathers at most a few dozen gradients, in f32).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "dispatcher/backends/emulator/emulator_backend.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "support/jit_problem_set.hpp"
#include "support/reference_comparison.hpp"
#include "support/emulated_variant.hpp"

namespace convjit {
namespace {

using test::kDtypes;

class EmulatedResize : public ::testing::TestWithParam<std::string_view> {
 protected:
  std::vector<unsigned char> run(const OpDescriptor& d, const test::HostOperands& host,
                                 std::size_t shift = 0) {
    return test::run_emulated_variant(backend_, d, host, GetParam(), shift);
  }
  void check(const OpDescriptor& d, std::mt19937& rng, double alpha = 1.0, double beta = 0.0,
             std::size_t shift = 0) {
    SCOPED_TRACE(descriptor_name(d));
    const test::HostOperands host = test::random_operands(d, rng, alpha, beta);
    const auto got = run(d, host, shift);
    if (!got.empty()) test::expect_matches_reference(d, host, got);
  }

  EmulatorBackend backend_;
};

TEST_P(EmulatedResize, RandomResizesInEveryModeAndDirection) {
  std::mt19937 rng(3901);
  int linear = 0, nearest = 0;
  for (DataType dtype : kDtypes)
    for (const OpDescriptor& d : test::random_resize_descriptors(rng, dtype, 30)) {
      check(d, rng);
      (d.resize_mode == ResizeMode::linear ? linear : nearest) += 1;
    }
  EXPECT_GT(linear, 10);
  EXPECT_GT(nearest, 40);
}

TEST_P(EmulatedResize, BlendsWithAlphaAndBetaAndRunsOffAlignment) {
  std::mt19937 rng(3902);
  for (const OpDescriptor& d : test::random_resize_descriptors(rng, DataType::bf16, 12)) {
    check(d, rng, 0.5, 0.25);
    check(d, rng, 1.0, 0.0, element_size(d.dtype));
  }
}

// Channels-last with whole vectors: the 16-byte path of the vector variant.
TEST_P(EmulatedResize, ChannelsLastVectorsInEveryMode) {
  std::mt19937 rng(3903);
  for (DataType dtype : kDtypes)
    for (convjit_resize_mode_t mode : {CONVJIT_RESIZE_NEAREST, CONVJIT_RESIZE_LINEAR})
      for (double scale : {2.0, 0.5, 1.5}) {
        ResizeParams p(2, mode);
        p.coordinates = mode == CONVJIT_RESIZE_LINEAR ? CONVJIT_RESIZE_HALF_PIXEL
                                                      : CONVJIT_RESIZE_ASYMMETRIC;
        p.scale[0] = p.scale[1] = scale;
        const auto out = [&](std::int64_t in) {
          return static_cast<std::int64_t>(std::floor(static_cast<double>(in) * scale));
        };
        test::HostTensor<float> x({2, 16, 6, 7}, test::TestLayout::nhwc);
        test::HostTensor<float> y({2, 16, out(6), out(7)}, test::TestLayout::nhwc);
        auto xd = x.desc(), yd = y.desc();
        test::set_dtype(xd, dtype), test::set_dtype(yd, dtype);
        for (Direction dir : {Direction::fwd, Direction::bwd}) {
          auto d = make_resize_descriptor(&p, dir, &xd, &yd);
          ASSERT_TRUE(d.is_ok()) << d.status().message();
          check(d.value(), rng);
          check(d.value(), rng, 0.5, 0.25);
        }
      }
}

TEST_P(EmulatedResize, ServesYolo11nUpsamples) {
  std::mt19937 rng(3904);
  int resizes = 0;
  for (DataType dtype : {DataType::f32, DataType::bf16})
    for (bool channels_last : {false, true})
      for (const OpDescriptor& d : test::model_descriptors(
               "yolo11n", {1, 64, channels_last, dtype}, /*every_op=*/true))
        if (d.is_resize()) {
          check(d, rng);
          ++resizes;
        }
  EXPECT_EQ(resizes, 16);
}

// A NaN in dy reaches every dx its output reads, the zero-weight linear
// tap included, as in the reference; and dx is the same bits on every run.
TEST_P(EmulatedResize, BackwardSpreadsANaNAndIsDeterministic) {
  std::mt19937 rng(3905);
  ResizeParams p(2, CONVJIT_RESIZE_LINEAR);
  p.coordinates = CONVJIT_RESIZE_ALIGN_CORNERS;
  test::HostTensor<float> x({1, 3, 5, 4}, test::TestLayout::nchw);
  test::HostTensor<float> y({1, 3, 9, 7}, test::TestLayout::nchw);
  auto xd = x.desc(), yd = y.desc();
  auto d = make_resize_descriptor(&p, Direction::bwd, &xd, &yd);
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  test::HostOperands host = test::random_operands(d.value(), rng);
  store_element(host.dy.data(), 10, DataType::f32, std::numeric_limits<double>::quiet_NaN());
  const auto got = run(d.value(), host), again = run(d.value(), host);
  EXPECT_EQ(got, again);
  const auto want = test::reference_output(d.value(), host);
  ASSERT_EQ(got.size(), want.size());
  int nans = 0;
  for (std::size_t i = 0; i < got.size() / 4; ++i) {
    const double a = load_element(got.data(), i, DataType::f32),
                 b = load_element(want.data(), i, DataType::f32);
    EXPECT_EQ(std::isnan(a), std::isnan(b)) << "element " << i;
    nans += std::isnan(b) ? 1 : 0;
  }
  EXPECT_GT(nans, 0);
}

INSTANTIATE_TEST_SUITE_P(Variants, EmulatedResize,
                         ::testing::Values(kDirectVariant, kVectorVariant),
                         [](const ::testing::TestParamInfo<std::string_view>& variant) {
                           return std::string(variant.param);
                         });

// The vector kernel comes first where its vectors apply, last elsewhere.
TEST(EmulatedResizeVariants, TheHeuristicChoosesVectorsForChannelsLast) {
  ResizeParams p(2, CONVJIT_RESIZE_NEAREST);
  for (test::TestLayout layout : {test::TestLayout::nhwc, test::TestLayout::nchw}) {
    test::HostTensor<float> x({1, 32, 4, 4}, layout), y({1, 32, 8, 8}, layout);
    auto xd = x.desc(), yd = y.desc();
    auto d = make_resize_descriptor(&p, Direction::fwd, &xd, &yd);
    ASSERT_TRUE(d.is_ok()) << d.status().message();
    const auto ids = jit_variants(d.value(), {"", true});
    ASSERT_EQ(ids.size(), 2u);
    EXPECT_EQ(ids.front(), layout == test::TestLayout::nhwc ? kVectorVariant : kDirectVariant);
  }
}

}  // namespace
}  // namespace convjit
