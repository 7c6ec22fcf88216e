// The JIT's batchnorm kernels (norm/batchnorm_{fwd,bwd}{,_vector}.cuh) in
// the host emulator against the reference, in both variants (channel
// planes and channel vectors): training (saved statistics and both
// running updates) and inference forwards, the backward with every output
// mask, without scale or shift, fused ReLU and SiLU, 1D/2D/3D, odd sizes
// and channel counts, batch 1, NCHW, NHWC and halo layouts, alpha/beta,
// channels long enough to be split over several blocks, and a NaN's spread.
// Every output and per-channel result is compared; the emulator fails a
// launch on any stray access or race.  Tolerances: support/batchnorm_calls.hpp.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "dispatcher/backends/emulator/emulator_backend.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "support/batchnorm_calls.hpp"
#include "support/host_device.hpp"
#include "support/jit_problem_set.hpp"

namespace convjit {
namespace {

using test::Case;
using test::descriptor;
using test::kAffine;
using test::kAllGrads;
using test::kCases;
using test::kHost;

class EmulatedBatchNorm : public ::testing::TestWithParam<std::string_view> {
 protected:
  void check(const OpDescriptor& d, std::mt19937& rng, double alpha = 1, double beta = 0) {
    test::check_batchnorm(backend_, GetParam(), d, rng, alpha, beta);
  }

  EmulatorBackend backend_;
};

TEST_P(EmulatedBatchNorm, TrainingAndInferenceForwards) {
  std::mt19937 rng(3910);
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16})
    for (const Case& c : kCases)
      for (std::int32_t flags : {kAffine, 0, std::int32_t{kNormScale}, kAffine | kNormInference}) {
        auto d = descriptor(c, dtype, Direction::fwd, flags);
        ASSERT_TRUE(d.is_ok()) << d.status().message();
        check(d.value(), rng);
      }
}

TEST_P(EmulatedBatchNorm, BackwardWithEveryMask) {
  std::mt19937 rng(3911);
  for (DataType dtype : {DataType::f32, DataType::bf16})
    for (const Case& c : kCases)
      for (std::int32_t mask :
           {kAllGrads, std::int32_t{kNormGradInput}, kNormGradScale | kNormGradShift})
        for (std::int32_t mode : {0, std::int32_t{kNormInference}}) {
          auto d = descriptor(c, dtype, Direction::bwd, kAffine | mask | mode);
          ASSERT_TRUE(d.is_ok()) << d.status().message();
          check(d.value(), rng);
        }
}

TEST_P(EmulatedBatchNorm, FusedActivationsOnnxUpdatesAndBlending) {
  std::mt19937 rng(3912);
  for (const Case& c : kCases)
    for (convjit_activation_t act : {CONVJIT_ACTIVATION_RELU, CONVJIT_ACTIVATION_SILU}) {
      for (Direction dir : {Direction::fwd, Direction::bwd}) {
        auto d = descriptor(c, DataType::f32, dir,
                            kAffine | (dir == Direction::bwd ? kAllGrads : 0), act);
        ASSERT_TRUE(d.is_ok()) << d.status().message();
        check(d.value(), rng);
        check(d.value(), rng, 0.5, 0.25);
      }
      auto onnx = descriptor(c, DataType::f32, Direction::fwd, kAffine, act, true);
      ASSERT_TRUE(onnx.is_ok()) << onnx.status().message();
      check(onnx.value(), rng);
    }
}

// A NaN in x makes its channel's statistics, and so the channel's whole
// output, NaN, as in PyTorch; the other channels are untouched.
TEST_P(EmulatedBatchNorm, ANaNSpreadsOverItsChannelOnly) {
  std::mt19937 rng(3913);
  auto d =
      descriptor({{2, 3, 4, 4}, test::TestLayout::nchw}, DataType::f32, Direction::fwd, kAffine);
  ASSERT_TRUE(d.is_ok());
  test::NormCall call = test::random_call(d.value(), rng, 1, 0);
  store_element(call.x.data(), 16 + 5, DataType::f32, std::numeric_limits<double>::quiet_NaN());
  BuildTrace trace;
  auto kernel = backend_.build_variant(d.value(), kHost, GetParam(), trace);
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
  ASSERT_TRUE(kernel.value()->execute(call.args(d.value())).is_ok());
  for (std::size_t i = 0; i < 96; ++i) {
    const bool channel_one = i % 48 >= 16 && i % 48 < 32;
    EXPECT_EQ(std::isnan(load_element(call.out.data(), i, DataType::f32)), channel_one) << i;
  }
  EXPECT_TRUE(std::isnan(call.mean[1]));
  EXPECT_FALSE(std::isnan(call.mean[0]) || std::isnan(call.mean[2]));
}

// YOLO11n's and ResNet-50's batchnorms (batch 1, small images), both directions.
TEST_P(EmulatedBatchNorm, ServesTheModelsBatchNorms) {
  std::mt19937 rng(3914);
  int norms = 0;
  for (const char* model : {"yolo11n", "resnet50"})
    for (const OpDescriptor& d :
         test::model_descriptors(model, {1, 32, true, DataType::bf16}, /*every_op=*/true))
      if (d.is_batchnorm() && norms < 40) {
        check(d, rng);
        ++norms;
      }
  EXPECT_EQ(norms, 40);
}

INSTANTIATE_TEST_SUITE_P(Variants, EmulatedBatchNorm,
                         ::testing::Values(kDirectVariant, kVectorVariant),
                         [](const ::testing::TestParamInfo<std::string_view>& variant) {
                           return std::string(variant.param);
                         });

// The vector kernels come first for channels-last layouts, last for
// channel planes, and not at all where a block cannot hold the vectors.
TEST(EmulatedBatchNormVariants, TheHeuristicChoosesVectorsForChannelsLast) {
  const VariantContext any{"", true};
  for (test::TestLayout layout : {test::TestLayout::nhwc, test::TestLayout::nchw}) {
    auto d = descriptor({{2, 32, 4, 4}, layout}, DataType::bf16, Direction::fwd, kAffine);
    ASSERT_TRUE(d.is_ok());
    const auto ids = jit_variants(d.value(), any);
    ASSERT_EQ(ids.size(), 2u);
    EXPECT_EQ(ids.front(), layout == test::TestLayout::nhwc ? kVectorVariant : kDirectVariant);
  }
  auto wide = descriptor({{1, 2049, 2, 2}, test::TestLayout::nhwc}, DataType::bf16, Direction::fwd,
                         kAffine);
  ASSERT_TRUE(wide.is_ok());
  EXPECT_EQ(jit_variants(wide.value(), any), std::vector<std::string>{"direct"});
  EXPECT_NE(check_variant(wide.value(), kVectorVariant, any).message().find("2049 channels"),
            std::string::npos);
}

}  // namespace
}  // namespace convjit
