// Fused forward epilogues, y = act(alpha conv(x, w) + bias [+ residual]) + beta y,
// in every conv fwd template the JIT offers (direct, every implicit-GEMM
// tile, depthwise and depthwise_tile), run by the host emulator against the
// reference: every activation, with and without the bias and the residual,
// alpha and beta, f32/f16/bf16, 1D/2D/3D, NCHW, NHWC and halo layouts,
// groups, and bias and residual views one element off a 16-byte boundary,
// which the vector paths must not load as vectors.  The epilogue also
// runs as a pass of its own after a plain conv (cuDNN's path).  The
// reference's own epilogue is checked against the definition, computed
// here in double.
//
// Tolerance: the conv's (kernel_tolerance, or TF32's on tensor cores),
// since the activations change an error in the sum by at most their
// slope (1.1 for SiLU, 1 for ReLU, 1/4 for the sigmoid), and the bias and
// residual are added once, in f32, to values the reference adds in its
// accumulation type.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>

#include "dispatcher/backends/emulator/emulator_backend.hpp"
#include "dispatcher/backends/jit/epilogue_after.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/reference/reference_backend.hpp"
#include "dispatcher/descriptor/canonical_layout.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/tolerance.hpp"
#include "dispatcher/settings.hpp"
#include "support/emulated_variant.hpp"
#include "support/host_device.hpp"
#include "support/jit_problem_set.hpp"
#include "support/reference_comparison.hpp"
#include "support/shifted_buffer.hpp"

namespace convjit {
namespace {

using test::kDtypes;
using test::kHost;
constexpr Activation kActivations[] = {Activation::identity, Activation::relu, Activation::silu,
                                       Activation::sigmoid};

OpDescriptor fused(const test::ConvCase& c, DataType dtype, Activation act, std::int32_t operands) {
  OpDescriptor d = test::conv_descriptors(c, dtype, {Direction::fwd}).at(0);
  d.activation = act;
  d.epilogue_operands = operands;
  return d;
}

using test::variant_tolerance;

test::ConvCase random_case(std::mt19937& rng, int spatial, bool depthwise) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  test::ConvCase c;
  if (depthwise) {
    c.channels = c.groups = *(std::initializer_list<std::int64_t>{3, 8, 16}.begin() + pick(0, 2));
    c.filters = c.channels * pick(1, 2);
  } else {
    c.groups = pick(1, 2);
    c.channels = c.groups * *(std::initializer_list<std::int64_t>{3, 8, 16}.begin() + pick(0, 2));
    c.filters = c.groups * *(std::initializer_list<std::int64_t>{5, 16, 24}.begin() + pick(0, 2));
  }
  c.batch = pick(1, 2);
  test::randomize_windows(c, rng, spatial, spatial == 3 ? 5 : (spatial == 2 ? 9 : 24));
  return c;
}

class EmulatedFusedEpilogue : public ::testing::Test {
 protected:
  // TF32 on: f32 is offered the tensor-core tiles as well.
  EmulatedFusedEpilogue() { SettingsStore::instance().set_allow_tf32(true); }
  ~EmulatedFusedEpilogue() override { SettingsStore::instance().set_allow_tf32(std::nullopt); }

  // Every variant on the same operands; `shift` moves the bias and the
  // residual that many bytes off a 16-byte boundary.  Returns how many ran.
  int check_every_variant(const OpDescriptor& d, std::mt19937& rng, double alpha, double beta,
                          std::size_t shift = 0) {
    SCOPED_TRACE(descriptor_name(d));
    BuildTrace trace;
    auto variants = backend_.build_variants(d, kHost, trace);
    EXPECT_TRUE(variants.is_ok()) << variants.status().message();
    if (!variants.is_ok()) return 0;
    const test::HostOperands host = test::random_operands(d, rng, alpha, beta);
    const test::ShiftedBuffer bias(host.bias, shift), residual(host.residual, shift);
    int ran = 0;
    for (const KernelVariant& v : variants.value()) {
      SCOPED_TRACE("variant " + v.id);
      std::vector<unsigned char> out = host.out;
      ExecArgs args = host.args(d, out.data());
      if (args.bias != nullptr) args.bias = bias.data();
      if (args.residual != nullptr) args.residual = residual.data();
      const Status s = v.kernel->execute(args);
      EXPECT_TRUE(s.is_ok()) << s.message();
      if (!s.is_ok()) continue;
      test::expect_matches_reference(d, host, out, variant_tolerance(d, v.id));
      ++ran;
    }
    return ran;
  }

  EmulatorBackend backend_;
};

// Every activation and operand set, cycling through random convs.
TEST_F(EmulatedFusedEpilogue, EveryVariantFusesEveryEpilogue) {
  std::mt19937 rng(2000);
  int ran = 0, trial = 0;
  for (DataType dtype : kDtypes)
    for (Activation act : kActivations)
      for (std::int32_t operands = 0; operands < 4; ++operands, ++trial) {
        const test::ConvCase c = random_case(rng, 1 + trial % 3, trial % 4 == 3);
        SCOPED_TRACE(c.describe());
        const double beta = trial % 3 == 0 ? 0.5 : 0.0;
        ran +=
            check_every_variant(fused(c, dtype, act, operands), rng, trial % 2 ? 0.75 : 1.0, beta);
      }
  EXPECT_GT(ran, 3 * 4 * 4 * 2) << "too few variants ran";
}

// Channels-last depthwise convs with whole vectors of channels: bias and
// residual take the 16-byte path, then the element path one element off.
TEST_F(EmulatedFusedEpilogue, DepthwiseVectorsFuseAlignedAndMisalignedOperands) {
  std::mt19937 rng(2001);
  test::ConvCase c;
  c.channels = c.groups = c.filters = 24;
  c.batch = 2, c.input = {7, 9}, c.kernel = {3, 3}, c.stride = {2, 1}, c.pad_begin = {1, 1};
  c.layout = test::TestLayout::nhwc;
  for (DataType dtype : kDtypes) {
    const OpDescriptor d = fused(c, dtype, Activation::silu, kEpilogueBias | kEpilogueResidual);
    ASSERT_TRUE(check_variant(d, kDepthwiseVariant, {"", true}).is_ok());
    check_every_variant(d, rng, 1.0, 0.0);
    check_every_variant(d, rng, 0.5, 0.25, element_size(dtype));
  }
}

// YOLO11n's Conv+BN+SiLU blocks at a small image: a 3x3 stride-2 conv and
// a 1x1 conv, channels-last, where the GEMM's tiles store whole rows.
TEST_F(EmulatedFusedEpilogue, YoloConvBlocksInChannelsLast) {
  std::mt19937 rng(2002);
  for (const auto& [channels, filters, kernel, stride] :
       {std::tuple<int, int, int, int>{16, 32, 3, 2}, {32, 32, 1, 1}}) {
    test::ConvCase c;
    c.channels = channels, c.filters = filters, c.batch = 2, c.input = {10, 10};
    c.kernel = {kernel, kernel}, c.stride = {stride, stride},
    c.pad_begin = {kernel / 2, kernel / 2};
    c.layout = c.filter_layout = test::TestLayout::nhwc;
    for (DataType dtype : {DataType::f16, DataType::bf16})
      EXPECT_GT(
          check_every_variant(fused(c, dtype, Activation::silu, kEpilogueBias), rng, 1.0, 0.0), 2);
  }
}

// The reference's epilogue against its definition, in double, on the
// reference's own plain conv.
TEST_F(EmulatedFusedEpilogue, ReferenceEpilogueFollowsItsDefinition) {
  std::mt19937 rng(2003);
  const test::ConvCase c = random_case(rng, 2, false);
  const double alpha = 0.75, beta = 0.5;
  for (Activation act : kActivations) {
    const OpDescriptor d = fused(c, DataType::f32, act, kEpilogueBias | kEpilogueResidual);
    OpDescriptor plain = d;
    plain.activation = Activation::identity, plain.epilogue_operands = 0;
    const test::HostOperands host = test::random_operands(d, rng, alpha, beta);
    test::HostOperands conv_only = host;
    conv_only.alpha = 1.0, conv_only.beta = 0.0;
    const auto conv = test::reference_output(plain, conv_only);
    const auto got = test::reference_output(d, host);
    const View5 y = canonical_view(d.y_dims, d.y_strides, d.spatial_dims);
    int checked = 0;
    for (std::int64_t n = 0; n < y.dims[0]; ++n)
      for (std::int64_t k = 0; k < y.dims[1]; ++k)
        for (std::int64_t h = 0; h < y.dims[3]; ++h)
          for (std::int64_t w = 0; w < y.dims[4]; ++w, ++checked) {
            const auto at = static_cast<std::size_t>(y.offset(n, k, 0, h, w));
            double v = alpha * load_element(conv.data(), at, d.dtype) +
                       load_element(host.bias.data(), static_cast<std::size_t>(k), d.dtype) +
                       load_element(host.residual.data(), at, d.dtype);
            if (act == Activation::relu) v = std::max(v, 0.0);
            if (act == Activation::silu) v = v / (1 + std::exp(-v));
            if (act == Activation::sigmoid) v = 1 / (1 + std::exp(-v));
            v += beta * load_element(host.out.data(), at, d.dtype);
            ASSERT_NEAR(load_element(got.data(), at, d.dtype), v, 1e-5 * (1 + std::abs(v)))
                << activation_name(act) << " element " << at;
          }
    EXPECT_GT(checked, 0);
  }
}

// The epilogue as a pass of its own after a plain conv (what follows
// cuDNN): the reference's plain conv, then the emulated epilogue_pass
// template, in place when beta is 0 and through a temporary otherwise.
TEST_F(EmulatedFusedEpilogue, ThePassAfterAPlainConvMatchesTheFusedReference) {
  std::mt19937 rng(2005);
  ReferenceBackend reference;
  int trial = 0;
  for (DataType dtype : kDtypes)
    for (Activation act : kActivations) {
      const test::ConvCase c = random_case(rng, 1 + trial % 3, trial % 3 == 2);
      const OpDescriptor d = fused(c, dtype, act, ++trial % 4);
      if (!d.has_epilogue()) continue;
      SCOPED_TRACE(descriptor_name(d));
      for (const std::string& id : jit_variants(d, {"", true}))
        EXPECT_NE(id, kEpiloguePassVariant) << "the pass is not a way to run the conv";
      BuildTrace trace;
      auto plain = reference.build(without_epilogue(d), kHost, trace);
      auto pass = backend_.build_variant(d, kHost, kEpiloguePassVariant, trace);
      ASSERT_TRUE(plain.is_ok() && pass.is_ok()) << pass.status().message();
      const auto kernel =
          epilogue_after(std::move(plain).value(), std::move(pass).value(),
                         std::make_unique<StreamWorkspaces>(
                             epilogue_temporary_bytes(d),
                             [](std::size_t n) -> Result<void*> { return std::malloc(n); },
                             [](void* p) { std::free(p); }),
                         nullptr);
      for (double beta : {0.0, 0.5}) {
        const test::HostOperands host = test::random_operands(d, rng, 0.75, beta);
        std::vector<unsigned char> out = host.out;
        const Status s = kernel->execute(host.args(d, out.data()));
        ASSERT_TRUE(s.is_ok()) << s.message();
        test::expect_matches_reference(d, host, out);
      }
    }
  OpDescriptor plain = fused(random_case(rng, 2, false), DataType::f32, Activation::identity, 0);
  EXPECT_FALSE(check_variant(plain, kEpiloguePassVariant, {"", true}).is_ok());
}

// An epilogue that names an operand the call does not pass is an error,
// not a read through a null pointer.
TEST_F(EmulatedFusedEpilogue, MissingOperandsAreErrors) {
  std::mt19937 rng(2004);
  const OpDescriptor d =
      fused(random_case(rng, 2, false), DataType::f32, Activation::relu, kEpilogueResidual);
  BuildTrace trace;
  auto kernel = backend_.build(d, kHost, trace);
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
  const test::HostOperands host = test::random_operands(d, rng);
  std::vector<unsigned char> out = host.out;
  ExecArgs args = host.args(d, out.data());
  args.residual = nullptr;
  const Status s = kernel.value()->execute(args);
  EXPECT_EQ(s.code(), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.message().find("residual pointer is null"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace convjit
