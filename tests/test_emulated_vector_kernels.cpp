// The kernels built for bandwidth besides the depthwise convs, in the host
// emulator against the reference: 16-byte channel vectors (variant
// "vector") and plane tiles staged in shared memory (variant "tile", for
// pooling).  Pooling (pool/pool_*_vector.cuh, pool/pool_*_tile.cuh), in
// both variants: max and both averages, fwd and bwd, 1D/2D/3D, strides,
// dilation, asymmetric padding and ceil mode, planes of several tiles,
// NaNs and ties in max windows.  The bias gradient
// (conv/bias_grad_vector.cuh): split reductions.  Both: channel counts on
// and off the vector, NHWC, NCHW and halo layouts, views one element off
// a 16-byte boundary, alpha/beta, and the models' ops.  Outputs start
// poisoned; the emulator fails a launch on any stray access or race.
// Tolerance: the dtype's (pooling windows of at most 64 elements; bias
// sums over at most 2 x 40 x 40 elements of [-1, 1], in f32).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "dispatcher/backends/emulator/emulator_backend.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "support/jit_problem_set.hpp"
#include "support/reference_comparison.hpp"
#include "support/emulated_variant.hpp"

namespace convjit {
namespace {

using test::kDtypes;
constexpr convjit_pool_mode_t kModes[] = {CONVJIT_POOL_MAX, CONVJIT_POOL_AVG_EXCLUDE_PAD,
                                          CONVJIT_POOL_AVG_INCLUDE_PAD};

test::PoolCase random_case(std::mt19937& rng, int spatial, convjit_pool_mode_t mode) {
  test::PoolCase c = test::random_pool_case(rng, spatial, mode);
  c.channels = *(std::initializer_list<std::int64_t>{3, 8, 16, 24}.begin() +
                 std::uniform_int_distribution<int>(0, 3)(rng));
  return c;
}

std::vector<OpDescriptor> descriptors(const test::PoolCase& c, DataType dtype) {
  auto t = test::make_pool_tensors<float>(c);
  auto x = t.x.desc(), y = t.y.desc();
  test::set_dtype(x, dtype), test::set_dtype(y, dtype);
  std::vector<OpDescriptor> out;
  for (Direction direction : {Direction::fwd, Direction::bwd}) {
    auto d = make_pool_descriptor(&t.params, direction, &x, &y);
    EXPECT_TRUE(d.is_ok()) << d.status().message();
    if (d.is_ok()) out.push_back(d.value());
  }
  return out;
}

class EmulatedVectorKernels : public ::testing::Test {
 protected:
  // Runs the variant on `host`, every operand `shift` bytes off
  // alignment; returns the output.
  std::vector<unsigned char> run(const OpDescriptor& d, const test::HostOperands& host,
                                 std::size_t shift = 0) {
    return test::run_emulated_variant(backend_, d, host, variant_, shift);
  }
  void check(const OpDescriptor& d, std::mt19937& rng, double alpha = 1.0, double beta = 0.0,
             std::size_t shift = 0) {
    SCOPED_TRACE(descriptor_name(d));
    const test::HostOperands host = test::random_operands(d, rng, alpha, beta);
    const auto got = run(d, host, shift);
    if (!got.empty()) test::expect_matches_reference(d, host, got);
  }

  EmulatorBackend backend_;
  std::string_view variant_ = kVectorVariant;
};

// The pooling tests, in both pooling variants.
class EmulatedPoolVariants : public EmulatedVectorKernels,
                             public ::testing::WithParamInterface<std::string_view> {
 protected:
  EmulatedPoolVariants() { variant_ = GetParam(); }
};

TEST_P(EmulatedPoolVariants, RandomPoolsInEveryModeAndDirection) {
  std::mt19937 rng(1910);
  for (DataType dtype : kDtypes)
    for (convjit_pool_mode_t mode : kModes)
      for (int i = 0; i < 8; ++i) {
        const test::PoolCase c = random_case(rng, 1 + i % 3, mode);
        for (const OpDescriptor& d : descriptors(c, dtype)) check(d, rng);
      }
}

// NHWC with whole vectors: the 16-byte path, blended, and the same
// operands off alignment, which take the element path.
TEST_P(EmulatedPoolVariants, VectorAndElementPathsAgree) {
  std::mt19937 rng(1911);
  test::PoolCase c;
  c.batch = 2, c.channels = 16, c.input = {9, 8}, c.window = {3, 3}, c.stride = {2, 2};
  c.pad_begin = {1, 1}, c.pad_end = {1, 0}, c.layout = test::TestLayout::nhwc;
  for (convjit_pool_mode_t mode : kModes) {
    c.mode = mode;
    for (DataType dtype : kDtypes)
      for (const OpDescriptor& d : descriptors(c, dtype)) {
        check(d, rng);
        check(d, rng, 0.5, 0.25);
        check(d, rng, 1.0, 0.0, element_size(dtype));
      }
  }
}

// Max windows with ties (every x zero but a few) and NaNs: per channel, the
// first NaN in window order wins, else the first maximum; the gradient
// goes to that element only.
TEST_P(EmulatedPoolVariants, MaxFollowsTheReferenceOnTiesAndNaNs) {
  std::mt19937 rng(1912);
  test::PoolCase c;
  c.channels = 8, c.input = {6, 6}, c.window = {3, 3}, c.stride = {1, 1};
  c.layout = test::TestLayout::nhwc;
  for (DataType dtype : {DataType::f32, DataType::bf16})
    for (const OpDescriptor& d : descriptors(c, dtype)) {
      test::HostOperands host = test::random_operands(d, rng);
      const std::size_t elements = host.x.size() / element_size(dtype);
      for (std::size_t i = 0; i < elements; ++i) store_element(host.x.data(), i, dtype, 0);
      for (std::size_t i = 3; i < elements; i += 29) {
        const bool nan = i % 2 == 1;
        store_element(host.x.data(), i, dtype,
                      nan ? std::numeric_limits<double>::quiet_NaN() : 0.5);
      }
      // expect_matches_reference skips NaNs (gaps in a poisoned output): compare them here.
      const auto got = run(d, host);
      const auto want = test::reference_output(d, host);
      ASSERT_EQ(got.size(), want.size());
      int nans = 0;
      for (std::size_t i = 0; i < got.size() / element_size(dtype); ++i) {
        const double a = load_element(got.data(), i, dtype),
                     b = load_element(want.data(), i, dtype);
        nans += std::isnan(b) ? 1 : 0;
        if (std::isnan(b))
          EXPECT_TRUE(std::isnan(a)) << "element " << i;
        else
          EXPECT_EQ(a, b) << "element " << i;
      }
      if (d.direction == Direction::fwd) {
        EXPECT_GT(nans, 0) << "no window holds a NaN";
      }
    }
}

// Planes of several tiles (a partial last one in each dimension), in NCHW
// and halo layouts: windows with stride, dilation and asymmetric padding,
// in 2D and 3D, and SPPF's 5x5 stride-1 max pool, blended.
TEST_P(EmulatedPoolVariants, PlanesOfSeveralTiles) {
  std::mt19937 rng(1916);
  test::PoolCase c;
  c.batch = 2, c.channels = 3, c.input = {19, 70}, c.window = {3, 2}, c.stride = {2, 1};
  c.dilation = {1, 2}, c.pad_begin = {1, 0}, c.pad_end = {0, 1};
  test::PoolCase sppf;
  sppf.channels = 2, sppf.input = {20, 40}, sppf.window = {5, 5}, sppf.stride = {1, 1};
  sppf.pad_begin = sppf.pad_end = {2, 2};
  test::PoolCase cube;
  cube.channels = 2, cube.input = {5, 9, 33}, cube.window = {2, 3, 3}, cube.stride = {2, 2, 2};
  cube.pad_begin = {0, 1, 1};
  for (test::PoolCase* p : {&c, &sppf, &cube})
    for (convjit_pool_mode_t mode : kModes)
      for (test::TestLayout layout : {test::TestLayout::nchw, test::TestLayout::halo}) {
        p->mode = mode, p->layout = layout;
        if (mode != CONVJIT_POOL_MAX) p->dilation.clear();
        for (const OpDescriptor& d : descriptors(*p, DataType::bf16)) {
          check(d, rng);
          check(d, rng, 0.5, 0.25);
        }
      }
}

INSTANTIATE_TEST_SUITE_P(Pool, EmulatedPoolVariants,
                         ::testing::Values(kVectorVariant, kTileVariant),
                         [](const ::testing::TestParamInfo<std::string_view>& variant) {
                           return std::string(variant.param);
                         });

// The heuristic puts the vector kernel first where its vectors apply and
// offers it last elsewhere; it serves pooling only.  The tile kernel comes
// first where W is contiguous and the vectors do not apply, if its halo
// fits shared memory.
TEST_F(EmulatedVectorKernels, TheHeuristicChoosesItWhereItsVectorsApply) {
  test::PoolCase c;
  c.channels = 32, c.input = {8, 8}, c.window = {2, 2}, c.stride = {2, 2};
  c.layout = test::TestLayout::nhwc;
  const VariantContext any{"", true};
  for (const OpDescriptor& d : descriptors(c, DataType::bf16))
    EXPECT_EQ(jit_variants(d, any).front(), kVectorVariant);
  c.layout = test::TestLayout::nchw;
  for (const OpDescriptor& d : descriptors(c, DataType::bf16)) {
    EXPECT_EQ(jit_variants(d, any).back(), kVectorVariant);
    EXPECT_EQ(jit_variants(d, any).front(), kTileVariant);
  }
  test::PoolCase global;  // a 200x200 global average: its halo is beyond 48 KiB
  global.channels = 2, global.input = {200, 200}, global.window = {200, 200};
  global.mode = CONVJIT_POOL_AVG_EXCLUDE_PAD;
  for (const OpDescriptor& d : descriptors(global, DataType::f32)) {
    const Status s = check_variant(d, kTileVariant, any);
    EXPECT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("bytes of halo"), std::string::npos) << s.message();
    EXPECT_EQ(jit_variants(d, any).front(), kDirectVariant);
  }
  c.layout = test::TestLayout::nhwc, c.channels = 12;
  for (const OpDescriptor& d : descriptors(c, DataType::bf16))
    EXPECT_EQ(jit_variants(d, any),
              (std::vector<std::string>{"direct", "vector", "tile"}));
  for (const OpDescriptor& d : descriptors(c, DataType::f32))
    EXPECT_EQ(jit_variants(d, any).front(), kVectorVariant) << "4 f32 channels a vector";
  std::mt19937 rng(1);
  const auto convs = test::random_conv_descriptors(rng, DataType::f32, 1);
  EXPECT_FALSE(check_variant(convs.at(0), kVectorVariant, any).is_ok());
  EXPECT_FALSE(check_variant(convs.at(0), kTileVariant, any).is_ok());
}

TEST_F(EmulatedVectorKernels, RandomBiasGradients) {
  std::mt19937 rng(1914);
  for (DataType dtype : kDtypes)
    for (const OpDescriptor& d : test::random_bias_descriptors(rng, dtype, 24)) check(d, rng);
}

// A long reduction over few filters, channels-last: split into slices
// whose sums the second pass adds; vector and element paths, blended.
TEST_F(EmulatedVectorKernels, BiasGradientsSplitLongReductions) {
  std::mt19937 rng(1915);
  test::ConvCase c;
  c.channels = 4, c.filters = 24, c.batch = 2, c.input = {40, 40}, c.kernel = {1, 1};
  c.layout = test::TestLayout::nhwc;
  for (DataType dtype : kDtypes) {
    auto t = test::make_conv_tensors<float>(c);
    auto dy = t.y.desc();
    test::set_dtype(dy, dtype);
    const auto d = make_bias_grad_descriptor(&dy);
    ASSERT_TRUE(d.is_ok()) << d.status().message();
    auto source = kernel_source(d.value(), kVectorVariant);
    ASSERT_TRUE(source.is_ok()) << source.status().message();
    EXPECT_EQ(source.value().template_name, "conv/bias_grad_vector.cuh");
    EXPECT_GT(source.value().workspace_bytes, 24 * sizeof(float)) << "the reduction is not split";
    EXPECT_EQ(jit_variants(d.value(), {"", true}).front(), kVectorVariant);
    check(d.value(), rng);
    check(d.value(), rng, 0.5, 0.25);
    check(d.value(), rng, 1.0, 0.0, element_size(dtype));
  }
}

// The pools and bias gradients of the models, at batch 1 and small
// images, channels-last; their pools in NCHW through the tiles.
TEST_F(EmulatedVectorKernels, EveryModelPoolAndBiasGradient) {
  std::mt19937 rng(1913);
  int pools = 0;
  const std::pair<const char*, ModelOptions> models[] = {
      {"resnet50", {1, 32, true, DataType::bf16}},
      {"yolo11n", {1, 64, true, DataType::f16}},
      {"cosmoflow", {1, 32, true, DataType::f32}}};
  for (const auto& [model, options] : models)
    for (const OpDescriptor& d : test::model_descriptors(model, options)) {
      if (!d.is_pool() && d.kind != OpKind::bias_grad) continue;
      check(d, rng);
      ++pools;
    }
  EXPECT_GT(pools, 6);
  variant_ = kTileVariant;
  int tiled = 0;
  for (const auto& [model, options] : models) {
    ModelOptions nchw = options;
    nchw.channels_last = false;
    for (const OpDescriptor& d : test::model_descriptors(model, nchw))
      if (d.is_pool()) check(d, rng), ++tiled;
  }
  EXPECT_GT(tiled, 4);
}

}  // namespace
}  // namespace convjit
