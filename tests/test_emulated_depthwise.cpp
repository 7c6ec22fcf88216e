// The depthwise kernels (kernel_templates/conv/depthwise_*.cuh) in the host
// emulator against the reference, in every direction: channel multipliers 1-3,
// channel counts on and off the 16-byte vector, 1D/2D/3D, strides 1-3,
// dilation, asymmetric padding, NCHW, NHWC and halo layouts, views one
// element off a 16-byte boundary, alpha/beta, and the model layers they
// serve.  Outputs start poisoned, and the emulator fails a launch on any
// stray access or race.  The tolerance is the dtype's: fwd and bwddata
// reduce at most 27 taps (times the multiplier), bwdfilt at most 121
// pixels, with f16/bf16 products exact in f32 and f32 sums.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "dispatcher/backends/emulator/emulator_backend.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "support/host_device.hpp"
#include "support/jit_problem_set.hpp"
#include "support/reduced_run.hpp"
#include "support/reference_comparison.hpp"
#include "support/shifted_buffer.hpp"

namespace convjit {
namespace {

using test::kHost;
constexpr Direction kDirections[] = {Direction::fwd, Direction::bwddata, Direction::bwdfilt};
using test::kDtypes;

test::ConvCase random_depthwise_case(std::mt19937& rng, int spatial) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  test::ConvCase c;
  c.channels = c.groups =
      *(std::initializer_list<std::int64_t>{2, 5, 8, 12, 16, 24}.begin() + pick(0, 5));
  c.filters = c.channels * pick(1, 3);
  c.batch = pick(1, 2);
  test::randomize_windows(c, rng, spatial, spatial == 3 ? 6 : (spatial == 2 ? 11 : 30));
  return c;
}

using test::descriptor;

class EmulatedDepthwise : public ::testing::Test {
 protected:
  // Runs the depthwise variant; `shift` bytes off a 16-byte boundary.
  void check(const OpDescriptor& d, std::mt19937& rng, double alpha = 1.0, double beta = 0.0,
             std::size_t shift = 0, std::string_view variant = kDepthwiseVariant) {
    SCOPED_TRACE(fmt::format("{} {}", variant, descriptor_name(d)));
    BuildTrace trace;
    auto kernel = backend_.build_variant(d, kHost, variant, trace);
    ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
    const test::HostOperands host = test::random_operands(d, rng, alpha, beta);
    test::ShiftedBuffer x(host.x, shift), w(host.w, shift), dy(host.dy, shift),
        out(host.out, shift);
    ExecArgs args = host.args(d, out.data());
    if (args.x != nullptr) args.x = x.data();
    if (args.w != nullptr) args.w = w.data();
    if (args.dy != nullptr) args.dy = dy.data();
    const Status s = kernel.value()->execute(args);
    ASSERT_TRUE(s.is_ok()) << s.message();
    test::expect_matches_reference(d, host, out.bytes());
  }

  EmulatorBackend backend_;
};

class EmulatedDepthwiseDirection : public EmulatedDepthwise,
                                   public ::testing::WithParamInterface<Direction> {};

// Both depthwise variants where they serve (depthwise_tile: whatever the
// layout, its halo within shared memory).
TEST_P(EmulatedDepthwiseDirection, RandomDepthwiseConvolutions) {
  std::mt19937 rng(1900 + static_cast<int>(GetParam()));
  int tiled = 0;
  for (DataType dtype : kDtypes)
    for (int i = 0; i < 24; ++i) {
      const test::ConvCase c = random_depthwise_case(rng, 1 + i % 3);
      SCOPED_TRACE(c.describe());
      const OpDescriptor d = descriptor(c, dtype, GetParam());
      check(d, rng);
      if (!check_variant(d, kDepthwiseTileVariant, {"", true}).is_ok()) continue;
      check(d, rng, 0.5, 0.25, 0, kDepthwiseTileVariant);  // beta 0 runs in the next tests
      ++tiled;
    }
  EXPECT_GT(tiled, 0);
}

// Planes larger than a tile (several tiles per plane, a partial last one),
// strides, dilation and multipliers, in NCHW and halo layouts.

// Channels-last with whole vectors of channels: the 16-byte path, with a
// strip of pixels that overhangs the row, and the same operands one
// element off alignment, which must take the element path.
TEST_P(EmulatedDepthwiseDirection, VectorAndElementPathsAgree) {
  std::mt19937 rng(1903);
  test::ConvCase c;
  c.channels = c.groups = c.filters = 24;
  c.batch = 2, c.input = {7, 9}, c.kernel = {3, 3}, c.stride = {2, 1}, c.dilation = {1, 2};
  c.pad_begin = {1, 2}, c.pad_end = {1, 1};
  c.layout = test::TestLayout::nhwc;
  for (DataType dtype : kDtypes) {
    const OpDescriptor d = descriptor(c, dtype, GetParam());
    check(d, rng);
    check(d, rng, 0.5, 0.25);
    check(d, rng, 1.0, 0.0, element_size(dtype));
    check(d, rng, 0.5, 0.25, element_size(dtype));
  }
}

// The depthwise layers of the models, at batch 1 and small images.
// bwdfilt's tiles: a filter's planes in several slices, each a block
// that sums its tiles' shares per tap in a fixed order; a 7x7 filter
// takes its taps in several passes.
TEST_F(EmulatedDepthwise, BackwardFilterTilesSplitAFiltersPlanesIntoSlices) {
  std::mt19937 rng(1907);
  test::ConvCase c;
  c.channels = c.groups = 2, c.filters = 4, c.batch = 3;
  c.input = {40, 50}, c.kernel = {7, 7}, c.pad_begin = {3, 3};
  for (DataType dtype : {DataType::f32, DataType::bf16}) {
    const OpDescriptor d = descriptor(c, dtype, Direction::bwdfilt);
    auto source = kernel_source(d, kDepthwiseTileVariant);
    ASSERT_TRUE(source.is_ok()) << source.status().message();
    ASSERT_EQ(source.value().entries.size(), 2u);
    EXPECT_EQ(source.value().template_name, "conv/depthwise_bwdfilt_tile.cuh");
    EXPECT_GT(source.value().workspace_bytes, 4 * 49 * sizeof(float)) << "no slices";
    if (dtype == DataType::f32)
      check(d, rng, 1.0, 0.0, 0, kDepthwiseTileVariant);
    else
      check(d, rng, 0.5, 0.25, 0, kDepthwiseTileVariant);
  }
}

// A long reduction over few weights: bwdfilt splits it into many slices,
// whose partial sums the second pass adds.
TEST_F(EmulatedDepthwise, BackwardFilterSplitsLongReductions) {
  std::mt19937 rng(1905);
  test::ConvCase c;
  c.channels = c.groups = c.filters = 8;
  c.batch = 2, c.input = {40, 40}, c.kernel = {3, 3}, c.pad_begin = {1, 1};
  c.layout = test::TestLayout::nhwc;
  for (DataType dtype : {DataType::f32, DataType::bf16}) {
    const OpDescriptor d = descriptor(c, dtype, Direction::bwdfilt);
    auto source = kernel_source(d, kDepthwiseVariant);
    ASSERT_TRUE(source.is_ok()) << source.status().message();
    ASSERT_EQ(source.value().entries.size(), 2u);
    EXPECT_GT(source.value().workspace_bytes, 8 * 9 * sizeof(float))
        << "the reduction is not split";
    check(d, rng, 0.5, 0.25);
  }
}

TEST_P(EmulatedDepthwiseDirection, EveryDepthwiseModelLayer) {
  std::mt19937 rng(1904);
  int layers = 0;
  for (DataType dtype : {DataType::f16, DataType::bf16})
    for (const OpDescriptor& d :
         test::sweep(test::model_descriptors("yolo11n", {1, 64, true, dtype}))) {
      if (d.direction != GetParam() || !is_depthwise(d)) continue;
      check(d, rng);
      ++layers;
    }
  EXPECT_GT(layers, 0);
}

INSTANTIATE_TEST_SUITE_P(Conv, EmulatedDepthwiseDirection, ::testing::ValuesIn(kDirections),
                         [](const auto& p) { return std::string(direction_name(p.param)); });

TEST_F(EmulatedDepthwise, TilesCoverPlanesWiderThanOneTile) {
  std::mt19937 rng(1906);
  test::ConvCase c;
  c.channels = c.groups = 3, c.filters = 6, c.batch = 2;
  c.input = {21, 70}, c.kernel = {3, 5}, c.stride = {2, 1}, c.dilation = {1, 2};
  c.pad_begin = {1, 4}, c.pad_end = {0, 3};
  test::ConvCase volume = c;
  volume.input = {5, 9, 33}, volume.kernel = {3, 3, 3}, volume.stride = {1, 2, 3};
  volume.dilation = {2, 1, 1}, volume.pad_begin = {2, 1, 1}, volume.pad_end = {2, 1, 0};
  for (Direction direction : kDirections) {
    for (test::TestLayout layout : {test::TestLayout::nchw, test::TestLayout::halo}) {
      c.layout = layout;
      for (DataType dtype : {DataType::f32, DataType::bf16})
        check(descriptor(c, dtype, direction), rng, 1.0, 0.0, 0, kDepthwiseTileVariant);
    }
    check(descriptor(volume, DataType::f16, direction), rng, 1.0, 0.0, 0, kDepthwiseTileVariant);
  }
}

// The heuristic puts the depthwise kernel first where its vectors apply
// (channels-last, one filter per channel, whole vectors of channels), the
// tile kernel where W is contiguous, and offers both elsewhere; neither
// serves grouped convs.
TEST_F(EmulatedDepthwise, TheHeuristicChoosesTheKernelForTheLayout) {
  test::ConvCase c;
  c.channels = c.groups = c.filters = 32;
  c.input = {8, 8}, c.kernel = {3, 3}, c.pad_begin = {1, 1};
  c.layout = test::TestLayout::nhwc;
  const VariantContext any{"", true};
  for (Direction direction : kDirections) {
    SCOPED_TRACE(direction_name(direction));
    EXPECT_EQ(jit_variants(descriptor(c, DataType::bf16, direction), any).front(),
              kDepthwiseVariant);
    test::ConvCase nchw = c;
    nchw.layout = test::TestLayout::nchw;
    const auto planar = jit_variants(descriptor(nchw, DataType::bf16, direction), any);
    EXPECT_EQ(planar.back(), kDepthwiseVariant);
    EXPECT_EQ(planar.front(), kDepthwiseTileVariant);
    test::ConvCase multiplier = c;
    multiplier.filters = 64;
    const auto ids = jit_variants(descriptor(multiplier, DataType::bf16, direction), any);
    EXPECT_EQ(ids.front(), kDirectVariant);
    EXPECT_EQ(std::count(ids.begin(), ids.end(), kDepthwiseVariant), 1);
  }
  // A dilation whose halo outgrows shared memory.
  test::ConvCase wide = c;
  wide.layout = test::TestLayout::nchw, wide.input = {12, 400}, wide.kernel = {3, 50};
  wide.dilation = {4, 8}, wide.stride = {3, 3};
  const Status too_big =
      check_variant(descriptor(wide, DataType::bf16, Direction::fwd), kDepthwiseTileVariant, any);
  EXPECT_FALSE(too_big.is_ok());
  EXPECT_NE(too_big.message().find("shared memory"), std::string::npos) << too_big.message();
  test::ConvCase grouped = c;
  grouped.groups = 16;
  const OpDescriptor g = descriptor(grouped, DataType::bf16, Direction::fwd);
  EXPECT_FALSE(check_variant(g, kDepthwiseVariant, any).is_ok());
  EXPECT_EQ(kernel_source(descriptor(c, DataType::bf16, Direction::fwd), kDepthwiseVariant)
                .value()
                .template_name,
            "conv/depthwise_fwd.cuh");
}

}  // namespace
}  // namespace convjit
