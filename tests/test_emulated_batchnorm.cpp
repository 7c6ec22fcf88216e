// The JIT's batchnorm kernels (norm/batchnorm_{fwd,bwd}{,_vector}.cuh) in
// the host emulator against the reference, in both variants (channel
// planes and channel vectors): training (saved statistics and both
// running updates) and inference forwards, the backward with every output
// mask, without scale or shift, fused ReLU and SiLU, 1D/2D/3D, odd sizes
// and channel counts, batch 1, NCHW, NHWC and halo layouts, alpha/beta,
// channels long enough to be split over several blocks, and a NaN's spread.
// Every output and per-channel result is compared; the emulator fails a
// launch on any stray access or race.
//
// Tolerance: the dtype's output tolerance, and for the per-channel values
// 1e-4 relative: they are f32 sums of at most 4 x 40 x 40 values of
// [-1, 1] (the kernels shift by the channel's first value, so the
// variance's cancellation costs little), against f64 in the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "dispatcher/backends/emulator/emulator_backend.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/reference/batchnorm_reference.hpp"
#include "dispatcher/descriptor/descriptor_builder.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/tolerance.hpp"
#include "support/host_tensor.hpp"
#include "support/jit_problem_set.hpp"
#include "support/reference_comparison.hpp"

namespace convjit {
namespace {

constexpr convjit_device_t kHost{CONVJIT_DEVICE_HOST, 0};
constexpr double kChannelTolerance = 1e-4;

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

NormCall random_call(const OpDescriptor& d, std::mt19937& rng, double alpha, double beta) {
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

void expect_channels_near(const Channels& got, const Channels& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], kChannelTolerance * (1 + std::abs(want[i])))
        << what << "[" << i << "]";
}

class EmulatedBatchNorm : public ::testing::TestWithParam<std::string_view> {
 protected:
  void check(const OpDescriptor& d, std::mt19937& rng, double alpha = 1, double beta = 0) {
    SCOPED_TRACE(descriptor_name(d));
    NormCall want = random_call(d, rng, alpha, beta), got = want;
    reference::batchnorm_reference(d, want.args(d));
    BuildTrace trace;
    auto kernel = backend_.build_variant(d, kHost, GetParam(), trace);
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

  EmulatorBackend backend_;
};

struct Case {
  std::vector<std::int64_t> dims;
  test::TestLayout layout;
};

Result<OpDescriptor> descriptor(const Case& c, DataType dtype, Direction dir, std::int32_t flags,
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

const Case kCases[] = {
    {{2, 3, 5}, test::TestLayout::nchw},        {{1, 5, 4, 3}, test::TestLayout::nhwc},
    {{2, 7, 3, 4}, test::TestLayout::halo},     {{2, 2, 3, 2, 3}, test::TestLayout::nchw},
    {{3, 16, 2, 5}, test::TestLayout::nhwc},    {{2, 3, 40, 40}, test::TestLayout::nchw},
    // Long enough channels to be cut into several slices in each variant.
    {{4, 2, 40, 40}, test::TestLayout::nchw},   {{4, 16, 40, 40}, test::TestLayout::nhwc},
};
constexpr std::int32_t kAffine = kNormScale | kNormShift;  // NormFlag bits
constexpr std::int32_t kAllGrads = kNormGradInput | kNormGradScale | kNormGradShift;

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
      for (std::int32_t mask : {kAllGrads, std::int32_t{kNormGradInput}, kNormGradScale | kNormGradShift})
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
        auto d = descriptor(c, DataType::f32, dir, kAffine | (dir == Direction::bwd ? kAllGrads : 0),
                            act);
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
  auto d = descriptor({{2, 3, 4, 4}, test::TestLayout::nchw}, DataType::f32, Direction::fwd,
                      kAffine);
  ASSERT_TRUE(d.is_ok());
  NormCall call = random_call(d.value(), rng, 1, 0);
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
  auto wide = descriptor({{1, 2049, 2, 2}, test::TestLayout::nhwc}, DataType::bf16,
                         Direction::fwd, kAffine);
  ASSERT_TRUE(wide.is_ok());
  EXPECT_EQ(jit_variants(wide.value(), any), std::vector<std::string>{"direct"});
  EXPECT_NE(check_variant(wide.value(), kVectorVariant, any).message().find("2049 channels"),
            std::string::npos);
}

}  // namespace
}  // namespace convjit
