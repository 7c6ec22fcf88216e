// The Hopper convolution (kernel_templates/conv/conv_fwd_wgmma.cuh and
// conv_bwdfilt_wgmma.cuh: TMA im2col and tile loads, an mbarrier ring,
// wgmma, setmaxnreg), fwd, stride-1 bwddata and bwdfilt, in the host
// emulator against the host reference, and where it applies
// (dispatcher/backends/jit/wgmma_conv.hpp).  Random channels-last convs in
// f16 and bf16, 1D/2D/3D, with channel counts on and off the 64-channel
// K step and filter counts on and off the 128-filter tile, pixels that do
// not fill the last tile, strides, dilations and padding at every edge.
// f16 and bf16 products are exact in f32 and wgmma accumulates in f32, so
// the dtype's usual tolerance (kernel_tolerance) holds.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dispatcher/backends/emulator/emulator_backend.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/jit/stride_phases.hpp"
#include "dispatcher/backends/jit/tap_fold.hpp"
#include "dispatcher/backends/jit/wgmma_conv.hpp"
#include "dispatcher/backends/jit/wgmma_store_map.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/tolerance.hpp"
#include "dispatcher/settings.hpp"
#include "support/emulated_variant.hpp"
#include "support/folded_stems.hpp"
#include "support/host_device.hpp"
#include "support/jit_problem_set.hpp"
#include "support/narrow_bwdfilts.hpp"
#include "support/reduced_run.hpp"
#include "support/reference_comparison.hpp"
#include "support/shifted_buffer.hpp"
#include "support/threads_store_scope.hpp"

namespace convjit {
namespace {

using test::kHost;

OpDescriptor fwd(const test::ConvCase& c, DataType dtype) {
  return test::conv_descriptors(c, dtype, {Direction::fwd}).at(0);
}
OpDescriptor bwddata(const test::ConvCase& c, DataType dtype) {
  return test::conv_descriptors(c, dtype, {Direction::bwddata}).at(0);
}
OpDescriptor bwdfilt(const test::ConvCase& c, DataType dtype) {
  return test::conv_descriptors(c, dtype, {Direction::bwdfilt}).at(0);
}

// A batch-2 2D 3x3 conv of stride and dilation 1, channels-last with
// K R S C filters.
test::ConvCase channels_last_3x3(std::int64_t channels, std::int64_t filters,
                                 std::vector<std::int64_t> input,
                                 std::vector<std::int64_t> pad_begin,
                                 std::vector<std::int64_t> pad_end) {
  test::ConvCase c;
  c.batch = 2, c.channels = channels, c.filters = filters, c.input = std::move(input);
  c.kernel = {3, 3}, c.stride = {1, 1}, c.dilation = {1, 1};
  c.pad_begin = std::move(pad_begin), c.pad_end = std::move(pad_end);
  c.layout = test::TestLayout::nhwc, c.filter_layout = test::TestLayout::nhwc;
  return c;
}

// Whether `config`'s clusters, where they share a pixel tile, have whole
// clusters of `d`'s filter tiles (check_pixel_cluster): a conv of few
// output channels is refused by the `pa` variants alone.
bool whole_pixel_clusters(const OpDescriptor& d, const WgmmaConvConfig& config) {
  const std::int64_t channels = d.direction == Direction::bwddata ? d.x_dims[1] : d.y_dims[1];
  return !config.cluster_pixels ||
         (channels + config.filters - 1) / config.filters % config.cluster == 0;
}

// The Hopper conv's lead variant where it is not the choice: after every
// other variant, its own others only following it.
std::string offered_last(const std::vector<std::string>& ids) {
  for (const std::string& id : ids)
    if (find_wgmma_config(id) != nullptr) return id;
  return "";
}
bool hopper_variants_trail(const std::vector<std::string>& ids) {
  const auto first = std::find_if(ids.begin(), ids.end(), [](const std::string& id) {
    return find_wgmma_config(id) != nullptr;
  });
  return std::all_of(first, ids.end(),
                     [](const std::string& id) { return find_wgmma_config(id) != nullptr; });
}

// A kernel that stores y by TMA refuses a launch with beta, naming the
// switch that keeps the variant's tiles on the threads' store.
void expect_refuses_beta(const OpDescriptor& d, std::mt19937& rng, double beta,
                         std::string_view variant) {
  EmulatorBackend backend;
  BuildTrace trace;
  auto kernel = backend.build_variant(d, kHost, variant, trace);
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
  const test::HostOperands host = test::random_operands(d, rng, 1.0, beta);
  std::vector<unsigned char> out = host.out;
  const Status s = kernel.value()->execute(host.args(d, out.data()));
  EXPECT_EQ(s.code(), CONVJIT_STATUS_UNSUPPORTED) << s.message();
  EXPECT_NE(s.message().find("CONVJIT_WGMMA_TMA_STORE=0"), std::string::npos) << s.message();
  EXPECT_EQ(out, host.out) << "y is untouched";
}

// `shift`: a fused epilogue's bias and residual that many bytes off a
// 16-byte boundary.  A variant that stores y by TMA serves beta 0 alone
// (the JIT runs other calls on its TMA fallback): with beta, it refuses
// the launch, and its tiles match on the threads' store.
void check(const OpDescriptor& d, std::mt19937& rng, double alpha = 1.0, double beta = 0.0,
           std::string_view variant = kWgmmaVariant, std::size_t shift = 0) {
  SCOPED_TRACE(fmt::format("{} {}", variant, descriptor_name(d)));
  ASSERT_TRUE(wgmma_conv_support(d).is_ok()) << wgmma_conv_support(d).message();
  if (beta != 0.0 && test::stores_by_tma(d, variant)) {
    expect_refuses_beta(d, rng, beta, variant);
    const test::ThreadsStoreScope threads;
    ASSERT_FALSE(test::stores_by_tma(d, variant));
    test::expect_emulated_variant_matches(d, rng, variant, alpha, beta, shift);
    return;
  }
  test::expect_emulated_variant_matches(d, rng, variant, alpha, beta, shift);
}

// `d` through `variant`'s kernel source as `adjust` leaves it (a grid cut
// short, say), against the reference; with beta, on the threads' store (a
// TMA store serves beta 0 alone: check).
template <class Adjust>
void run_adjusted(const OpDescriptor& d, std::mt19937& rng, std::string_view variant, double alpha,
                  double beta, Adjust adjust) {
  std::optional<test::ThreadsStoreScope> threads;
  if (beta != 0.0) threads.emplace();
  auto source = kernel_source(d, variant);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  adjust(source.value());
  auto kernel = emulate_kernel_source(d, std::move(source).value());
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
  const test::HostOperands host = test::random_operands(d, rng, alpha, beta);
  std::vector<unsigned char> out = host.out;
  const Status s = kernel.value()->execute(host.args(d, out.data()));
  ASSERT_TRUE(s.is_ok()) << s.message();
  test::expect_matches_reference(d, host, out, kernel_tolerance(d));
}

TEST(EmulatedWgmmaConv, RandomChannelsLastConvolutions) {
  std::mt19937 rng(4300);
  for (DataType dtype : {DataType::bf16, DataType::f16})
    for (int i = 0; i < 9; ++i) {
      const test::ConvCase c = test::random_channels_last_conv(rng, 1 + i % 3);
      SCOPED_TRACE(c.describe());
      check(fwd(c, dtype), rng);
    }
}

// The configuration of two blocks an SM (a 3-stage ring, 216 consumer
// registers) on random convs, fwd and bwddata, and with alpha/beta.
TEST(EmulatedWgmmaConv, TwoBlocksAnSmConfiguration) {
  std::mt19937 rng(4305);
  const std::string_view variant = kWgmmaConfigs[1].id;
  for (int i = 0; i < 6; ++i) {
    test::ConvCase c = test::random_channels_last_conv(rng, 1 + i % 3);
    SCOPED_TRACE(c.describe());
    check(fwd(c, i % 2 ? DataType::f16 : DataType::bf16), rng, 1.0, i == 0 ? 0.5 : 0.0, variant);
    c.stride.assign(c.input.size(), 1);
    c.filters = 8 * (1 + i);
    check(bwddata(c, DataType::bf16), rng, 1.0, 0.0, variant);
  }
}

// The 128 x 64 tile (4 stages of 24 KiB, two blocks an SM) on random
// convs: fwd with filters on and off the 64-filter tile (several tiles
// across them), some with a fused epilogue; bwddata of stride 1 and
// strided (by phases), dx's channels on and off the tile; alpha/beta.
TEST(EmulatedWgmmaConv, HalfTileConfiguration) {
  std::mt19937 rng(4311);
  const std::string_view variant = kWgmmaConfigs[2].id;
  ASSERT_EQ(kWgmmaConfigs[2].filters, 64);
  for (int i = 0; i < 6; ++i) {
    test::ConvCase c = test::random_channels_last_conv(rng, 1 + i % 3);
    SCOPED_TRACE(c.describe());
    OpDescriptor d = fwd(c, i % 2 ? DataType::f16 : DataType::bf16);
    if (i % 3 == 1) {
      d.activation = Activation::silu;
      d.epilogue_operands = kEpilogueBias | kEpilogueResidual;
    }
    check(d, rng, 1.0, i == 0 ? 0.5 : 0.0, variant);
    c.filters = 8 * (1 + i);  // dy's channels, a multiple of 8
    c.stride[0] = 2;
    if (const OpDescriptor phased = bwddata(c, DataType::bf16);
        wgmma_conv_support(phased).is_ok())  // else a window TMA's offsets cannot reach
      check(phased, rng, i == 2 ? 0.5 : 1.0, i == 2 ? 0.25 : 0.0, variant);
    c.stride.assign(c.input.size(), 1);
    check(bwddata(c, DataType::bf16), rng, 1.0, 0.0, variant);
  }
}

TEST(EmulatedWgmmaConv, AlphaAndBetaBlend) {
  std::mt19937 rng(4301);
  const test::ConvCase c = test::random_channels_last_conv(rng, 2);
  SCOPED_TRACE(c.describe());
  check(fwd(c, DataType::bf16), rng, 0.5, 0.25);
}

// A conv fwd's fused epilogue (common/fused_epilogue.cuh), applied as the
// tile is stored: every activation, with and without the bias and the
// residual, alpha and beta, f16 and bf16, in both configurations, on
// random convs (filters on and off the 128-filter tile and the 8-filter
// chunk); then a bias and residual one element off a 16-byte boundary,
// which the store must read element by element.  The tolerance is the
// conv's: the activations' slopes are at most 1.1 (SiLU), and the bias
// and residual are added once, in f32 (test_emulated_fused_epilogue.cpp).
TEST(EmulatedWgmmaConv, FusesEveryEpilogue) {
  std::mt19937 rng(4309);
  int trial = 0;
  for (Activation act :
       {Activation::identity, Activation::relu, Activation::silu, Activation::sigmoid})
    for (std::int32_t operands = 0; operands < 4; ++operands, ++trial) {
      const test::ConvCase c = test::random_channels_last_conv(rng, 1 + trial % 3);
      SCOPED_TRACE(c.describe());
      OpDescriptor d = fwd(c, trial % 2 ? DataType::f16 : DataType::bf16);
      d.activation = act;
      d.epilogue_operands = operands;
      check(d, rng, trial % 3 ? 1.0 : 0.75, trial % 4 == 1 ? 0.5 : 0.0,
            kWgmmaConfigs[trial % 2].id);
    }
  test::ConvCase c = channels_last_3x3(64, 136, {9, 7}, {1, 0}, {0, 1});
  OpDescriptor d = fwd(c, DataType::bf16);
  d.activation = Activation::silu;
  d.epilogue_operands = kEpilogueBias | kEpilogueResidual;
  check(d, rng, 1.0, 0.0, kWgmmaVariant, 0);
  check(d, rng, 0.5, 0.25, kWgmmaVariant, 2);
}

// A fwd whose channels TMA cannot map (no whole 16-byte chunk: a stem's
// 3) runs with its horizontal taps folded into its channels
// (tap_fold.hpp): x' and w' written by the first pass, the conv of one
// tap along W.  The stems of support/folded_stems.hpp, each in one
// configuration (all eight in turn), with alpha/beta and some with a
// fused epilogue; ResNet-50's stem itself, on a small image, in the
// configuration auto leads with.  f16 and bf16 products are exact in f32:
// the dtype's tolerance holds.
TEST(EmulatedWgmmaConv, FoldsTheTapsOfConvsWhoseChannelsTmaCannotMap) {
  std::mt19937 rng(4330);
  const std::vector<test::ConvCase> cases = test::folded_stem_cases();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].describe());
    OpDescriptor d = fwd(cases[i], i % 2 ? DataType::f16 : DataType::bf16);
    ASSERT_TRUE(folds_taps(d));
    if (i % 4 == 2) {
      d.activation = Activation::silu;
      d.epilogue_operands = kEpilogueBias | kEpilogueResidual;
    }
    // As the GPU test runs them: all but the row-tap tiles (one tap along W)
    // and the pixel clusters where the filters make no whole cluster.
    for (const WgmmaConvConfig& config : kWgmmaConfigs)
      EXPECT_EQ(wgmma_conv_support(d, config).is_ok(),
                !config.row_taps && whole_pixel_clusters(d, config))
          << config.id;
    check(d, rng, i % 3 ? 1.0 : 0.75, i % 4 == 1 ? 0.5 : 0.0, kWgmmaConfigs[i % 8].id);
  }
  const OpDescriptor d = fwd(test::small_resnet50_stem(), DataType::bf16);
  check(d, rng, 1.0, 0.0, wgmma_lead_config(d).id);
}

// A bwdfilt folds the same stems: x' from the first pass, dw' as partial
// sums (one slice or several), unfolded into dw by the second pass, in
// both configurations that serve a bwdfilt, dw in either filter layout,
// with alpha/beta.  Its dy must be channels-last, as unfolded.  The
// tolerance is the dtype's over the reduction's length (the pixels).
TEST(EmulatedWgmmaConv, FoldsTheTapsOfStemsInBwdfilt) {
  std::mt19937 rng(4331);
  const std::vector<test::ConvCase> cases = test::folded_stem_cases();
  int folded = 0;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].describe());
    const OpDescriptor d = bwdfilt(cases[i], i % 2 ? DataType::f16 : DataType::bf16);
    ASSERT_TRUE(folds_taps(d));
    if (cases[i].layout == test::TestLayout::nchw) {
      const Status s = wgmma_conv_support(d);
      EXPECT_NE(s.message().find("dy"), std::string::npos) << s.message();
      continue;
    }
    check(d, rng, i % 3 ? 1.0 : 0.75, i % 4 == 1 ? 0.5 : 0.0, kWgmmaConfigs[i % 2].id);
    ++folded;
  }
  EXPECT_GE(folded, 5);
  const OpDescriptor d = bwdfilt(test::small_resnet50_stem(), DataType::bf16);
  check(d, rng, 1.0, 0.0, wgmma_lead_config(d).id);
}

// A bwdfilt of 8 to 24 channels and stride 1 folds its taps too, x'
// copied from x chunk by chunk: the cases of support/narrow_bwdfilts.hpp
// in both configurations that serve a bwdfilt, with alpha/beta; auto
// leads with it on sm_90.  Strided, with one tap along W, or a fwd, the
// conv keeps its taps.
TEST(EmulatedWgmmaConv, FoldsTheTapsOfNarrowBwdfilts) {
  std::mt19937 rng(4332);
  const std::vector<test::ConvCase> cases = test::narrow_bwdfilt_cases();
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].describe());
    const OpDescriptor d = bwdfilt(cases[i], i % 2 ? DataType::f16 : DataType::bf16);
    ASSERT_TRUE(folds_taps(d));
    EXPECT_EQ(wgmma_forward_equivalent(d).x_dims[1], cases[i].channels * cases[i].kernel.back());
    check(d, rng, i % 3 ? 1.0 : 0.75, i % 4 == 1 ? 0.5 : 0.0, kWgmmaConfigs[i % 2].id);
  }
  const OpDescriptor yolo = bwdfilt(channels_last_3x3(16, 8, {160, 160}, {1, 1}, {1, 1}),
                                    DataType::bf16);  // b2.c3k2.m.cv1, two images
  ASSERT_TRUE(folds_taps(yolo));
  EXPECT_EQ(jit_variants(yolo, {"sm_90", false}).front(), wgmma_lead_config(yolo).id);
  test::ConvCase strided = cases[1];
  strided.stride.back() = 2;
  EXPECT_FALSE(folds_taps(bwdfilt(strided, DataType::bf16)));
  test::ConvCase one_tap = cases[1];
  one_tap.kernel.back() = 1;
  EXPECT_FALSE(folds_taps(bwdfilt(one_tap, DataType::bf16)));
  EXPECT_FALSE(folds_taps(fwd(cases[1], DataType::bf16)));
}

// The fold's shape: x' and w' in the workspace ahead of the maps that read
// them, the folded conv's 7 K steps for ResNet-50's stem, and where it
// stops: rows of taps wider than a K step keep the tiles, refused by TMA's
// rule; other directions and groups are not folded.  On sm_90 the fold
// leads (the tiles gather a stem's channels one by one).
TEST(EmulatedWgmmaConv, FoldsOnlyTapRowsThatFitAKStepAndLeadsWithThem) {
  test::ConvCase stem;
  stem.batch = 4, stem.channels = 3, stem.filters = 64, stem.input = {224, 224};
  stem.kernel = {7, 7}, stem.stride = {2, 2}, stem.pad_begin = {3, 3};
  stem.layout = test::TestLayout::nhwc;
  const OpDescriptor d = fwd(stem, DataType::bf16);
  ASSERT_TRUE(folds_taps(d));
  const OpDescriptor e = wgmma_forward_equivalent(d);
  EXPECT_EQ(e.x_dims[1], 24);
  EXPECT_EQ(e.x_dims[3], 112) << "W' is the output's width";
  EXPECT_EQ(e.w_dims[3], 1);
  EXPECT_EQ(e.stride[1], 1);
  EXPECT_EQ(e.pad_begin[1], 0);
  const TapFoldLayout fold = tap_fold_layout(d);
  EXPECT_EQ(fold.pixels, 4 * 224 * 112);
  EXPECT_EQ(fold.weights, 64 * 7 * 24);
  EXPECT_EQ(fold.filters_offset, static_cast<std::size_t>(4 * 224 * 112 * 24 * 2));
  auto source = kernel_source(d, wgmma_lead_config(d).id);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  const KernelSource& k = source.value();
  ASSERT_EQ(k.entries.size(), 2u);
  EXPECT_EQ(k.entries[0].name, "convjit_kernel_prepare");
  EXPECT_EQ(k.entries[0].threads, fold.pixels + fold.weights);
  EXPECT_GE(k.workspace_bytes, fold.workspace_bytes);
  // x' and w' from the workspace; the tile to y itself by TMA.
  ASSERT_EQ(k.tensor_maps.size(), 3u);
  EXPECT_EQ(k.tensor_maps[0].operand, TensorMapArgument::Operand::workspace);
  EXPECT_EQ(k.tensor_maps[0].byte_offset, 0u);
  EXPECT_EQ(k.tensor_maps[1].operand, TensorMapArgument::Operand::workspace);
  EXPECT_EQ(k.tensor_maps[1].byte_offset, fold.filters_offset);
  EXPECT_EQ(k.tensor_maps[2].operand, TensorMapArgument::Operand::out);
  EXPECT_NE(k.source.find("TMA_STORE = 1"), std::string::npos);
  EXPECT_NE(k.source.find("FOLD = 1"), std::string::npos);
  EXPECT_EQ(jit_variants(d, {"sm_90", false}).front(), wgmma_lead_config(d).id);
  const std::vector<std::string> emulated = jit_variants(d, {"", false});
  EXPECT_TRUE(hopper_variants_trail(emulated));
  test::ConvCase wide = stem;  // 12 channels x 7 taps: 84, past a K step
  wide.channels = 12;
  EXPECT_FALSE(folds_taps(fwd(wide, DataType::bf16)));
  const Status s = wgmma_conv_support(fwd(wide, DataType::bf16));
  EXPECT_NE(s.message().find("16"), std::string::npos) << s.message();
  EXPECT_FALSE(folds_taps(bwddata(stem, DataType::bf16)));
  EXPECT_FALSE(folds_taps(fwd(stem, DataType::f32)));
  // A bwdfilt's first pass writes x' alone; its partial sums of dw' follow
  // x' in the workspace, added and unfolded by a second pass even with
  // one slice.  It leads on sm_90 too.
  const OpDescriptor grad = bwdfilt(stem, DataType::bf16);
  ASSERT_TRUE(folds_taps(grad));
  const TapFoldLayout grad_fold = tap_fold_layout(grad);
  EXPECT_EQ(grad_fold.workspace_bytes, grad_fold.filters_offset) << "no w' to write";
  auto grad_source = kernel_source(grad, wgmma_lead_config(grad).id);
  ASSERT_TRUE(grad_source.is_ok()) << grad_source.status().message();
  const KernelSource& g = grad_source.value();
  ASSERT_EQ(g.entries.size(), 3u);
  EXPECT_EQ(g.entries[0].name, "convjit_kernel_prepare");
  EXPECT_EQ(g.entries[0].threads, grad_fold.pixels);
  EXPECT_EQ(g.entries[2].name, "convjit_kernel_finish");
  EXPECT_GT(g.workspace_bytes, grad_fold.filters_offset + grad_fold.weights * sizeof(float));
  ASSERT_EQ(g.tensor_maps.size(), 2u);
  EXPECT_EQ(g.tensor_maps[0].operand, TensorMapArgument::Operand::workspace);
  EXPECT_EQ(g.tensor_maps[1].operand, TensorMapArgument::Operand::in1);
  EXPECT_NE(g.source.find(fmt::format("PARTIALS = {}", grad_fold.filters_offset / 4)),
            std::string::npos);
  EXPECT_EQ(jit_variants(grad, {"sm_90", false}).front(), wgmma_lead_config(grad).id);
  test::ConvCase single = test::small_resnet50_stem();  // one slice: still the second pass
  single.batch = 1, single.input = {7, 7};
  const OpDescriptor one = bwdfilt(single, DataType::bf16);
  auto one_source = kernel_source(one, wgmma_lead_config(one).id);
  ASSERT_TRUE(one_source.is_ok()) << one_source.status().message();
  EXPECT_NE(one_source.value().source.find("SPLIT = 1"), std::string::npos);
  EXPECT_EQ(one_source.value().entries.back().name, "convjit_kernel_finish");
  OpDescriptor crowd = d;  // 4096 images: x' of 4.9 GB, refused by name, not folded
  crowd.x_dims[0] = crowd.y_dims[0] = 4096;
  EXPECT_FALSE(folds_taps(crowd));
  const Status big = wgmma_conv_support(crowd);
  EXPECT_NE(big.message().find("MiB of workspace"), std::string::npos) << big.message();
  test::ConvCase aligned = stem;  // whole chunks: TMA maps x itself
  aligned.channels = 8;
  EXPECT_FALSE(folds_taps(fwd(aligned, DataType::bf16)));
}

// bwddata of stride 1 as the forward conv of dy with the flipped,
// transposed filters: random windows, dilations and padding (some beyond
// the filter's reach, a negative padding of the forward conv), dy's
// channels (the conv's filters) a multiple of 8, dx's (its channels) on
// and off the 128-filter tile.
TEST(EmulatedWgmmaConv, RandomStrideOneBackwardData) {
  std::mt19937 rng(4303);
  for (DataType dtype : {DataType::bf16, DataType::f16})
    for (int i = 0; i < 6; ++i) {
      test::ConvCase c = test::random_channels_last_conv(rng, 1 + i % 3);
      c.stride.assign(c.input.size(), 1);
      c.filters = 8 * std::uniform_int_distribution<std::int64_t>(1, 20)(rng);
      SCOPED_TRACE(c.describe());
      check(bwddata(c, dtype), rng);
    }
}

// The bwddata cases the random ones may miss: padding past the filter's
// reach on one side and none on the other, a dilated 3D filter, K R S C
// filters (read in place, MN-major, the taps flipped as they load) and
// K C R S ones (a packed, flipped copy), alpha/beta, and tiles across
// dx's pixels and channels.
TEST(EmulatedWgmmaConv, BackwardDataEdgesAndBlends) {
  std::mt19937 rng(4304);
  test::ConvCase c = channels_last_3x3(136, 72, {9, 15}, {3, 0}, {0, 2});
  check(bwddata(c, DataType::bf16), rng, 0.5, 0.25);
  c.filter_layout = test::TestLayout::nchw;
  c.channels = 40, c.filters = 64;
  c.input = {5, 6, 7}, c.kernel = {2, 3, 2}, c.stride = {1, 1, 1}, c.dilation = {2, 1, 3};
  c.pad_begin = {1, 2, 0}, c.pad_end = {2, 0, 3};
  check(bwddata(c, DataType::f16), rng);
}

// bwdfilt: random channels-last convs (strides, dilations, padding at
// every edge, 1D/2D/3D), their filters rounded up to a multiple of 8 (dy
// is read with TMA), dw K C R S or K R S C.  The filter counts fall on
// and off the 128-filter tile and below its second box of 64; the
// channels on and off the 64-channel box, so taps share a tile.
TEST(EmulatedWgmmaConv, RandomBackwardFilter) {
  std::mt19937 rng(4306);
  for (DataType dtype : {DataType::bf16, DataType::f16})
    for (int i = 0; i < 6; ++i) {
      test::ConvCase c = test::random_channels_last_conv(rng, 1 + i % 3);
      c.filters = (c.filters + 7) / 8 * 8;
      SCOPED_TRACE(c.describe());
      check(bwdfilt(c, dtype), rng);
    }
}

// A bwdfilt long enough to be cut into slices of the pixels (a partial
// sum per slice, added in order by the second pass), blended with
// alpha/beta into K C R S filters; and one with a single slice, which
// writes dw itself, over two filter tiles and three taps' tiles, or with
// K C R S dw writes a partial sum that the second pass lays out.
TEST(EmulatedWgmmaConv, BackwardFilterSlicesAndBlends) {
  // The second pass (the clusters' sums: ATilesClusterAddsItsSlices).
  const test::SettingScope second_pass("CONVJIT_WGMMA_CLUSTER_SUMS", "0");
  std::mt19937 rng(4307);
  test::ConvCase c = channels_last_3x3(24, 16, {40, 52}, {1, 1}, {1, 1});
  c.filter_layout = test::TestLayout::nchw;
  const OpDescriptor sliced = bwdfilt(c, DataType::bf16);
  auto source = kernel_source(sliced, kWgmmaVariant);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  ASSERT_EQ(source.value().entries.size(), 2u);
  EXPECT_EQ(source.value().entries[1].name, "convjit_kernel_finish");
  EXPECT_NE(source.value().source.find("SPLIT = 8;"), std::string::npos);  // 65 steps / 8
  EXPECT_EQ(source.value().entries[1].threads, 16 * 24 * 9);              // a thread a weight
  check(sliced, rng, 0.5, 0.25);
  // The second pass's grid cut to 100 threads for 3456 weights: each loops
  // (a wave's threads at most on a GPU, wgmma_conv.cpp).
  run_adjusted(sliced, rng, kWgmmaVariant, 0.5, 0.25,
               [](KernelSource& cut) { cut.entries[1].threads = 100; });
  // ResNet-50's layer3.conv2: 589824 weights in 36 tiles of 98 steps.  7
  // slices put 252 blocks on 132 SMs, the busiest's 2 blocks 2/7 of a
  // tile; 6 left it 1/3, 8 (288 blocks) 3/8.
  test::ConvCase big = channels_last_3x3(256, 256, {14, 14}, {1, 1}, {1, 1});
  big.batch = 32;
  const WgmmaConvLaunch summed = wgmma_conv_launch(bwdfilt(big, DataType::bf16), kWgmmaConfigs[0]);
  EXPECT_EQ(summed.split, 7);
  EXPECT_EQ(summed.entries.back().threads, 132 * 2048);
  c = channels_last_3x3(136, 200, {5, 6}, {0, 2}, {1, 0});
  c.dilation = {2, 1};
  const OpDescriptor whole = bwdfilt(c, DataType::f16);
  auto one = kernel_source(whole, kWgmmaConfigs[1].id);
  ASSERT_TRUE(one.is_ok()) << one.status().message();
  EXPECT_EQ(one.value().entries.size(), 1u);
  check(whole, rng, 1.0, 0.0, kWgmmaConfigs[1].id);
  // Into K C R S dw, whose channels lie 9 weights apart, the single
  // slice's tiles store a partial sum, and the second pass lays dw out
  // along its taps, blending it there.
  c.filter_layout = test::TestLayout::nchw;
  const OpDescriptor kcrs = bwdfilt(c, DataType::f16);
  auto laid_out = kernel_source(kcrs, kWgmmaConfigs[1].id);
  ASSERT_TRUE(laid_out.is_ok()) << laid_out.status().message();
  EXPECT_NE(laid_out.value().source.find("SPLIT = 1;"), std::string::npos);
  ASSERT_EQ(laid_out.value().entries.size(), 2u);
  EXPECT_EQ(laid_out.value().entries[1].name, "convjit_kernel_finish");
  check(kcrs, rng, 0.5, 0.25, kWgmmaConfigs[1].id);
}

// A bwdfilt's slices of the pixels: the fewest that leave the busiest SM
// the least of the work, within 264 blocks (two an SM) and 8 K steps a
// slice.  ResNet-50's layers at batch 32: layer4.conv1's 64 tiles of 25
// steps take 2 slices (128 blocks, one an SM); layer4.conv2's 144 tiles
// keep one (288 blocks would be a second round); layer3.conv1's 16 tiles of
// 98 steps take 8 (128 blocks; 16 would be two an SM for the same share).
TEST(EmulatedWgmmaConv, SlicesABwdfiltSoThatTheBusiestSmHasTheLeast) {
  const auto slices = [](std::int64_t channels, std::int64_t filters, std::int64_t size,
                         std::int64_t kernel) {
    test::ConvCase c;
    c.batch = 32, c.channels = channels, c.filters = filters, c.input = {size, size};
    c.kernel = {kernel, kernel}, c.stride = c.dilation = {1, 1};
    c.pad_begin = c.pad_end = {kernel / 2, kernel / 2};
    c.layout = c.filter_layout = test::TestLayout::nhwc;
    return wgmma_conv_launch(bwdfilt(c, DataType::bf16), kWgmmaConfigs[0]).split;
  };
  EXPECT_EQ(slices(2048, 512, 7, 1), 2);
  EXPECT_EQ(slices(512, 512, 7, 3), 1);
  EXPECT_EQ(slices(1024, 256, 14, 1), 8);
  EXPECT_EQ(slices(256, 256, 14, 3), 7);
}

// dw from `d`'s kernel of `variant` on `host`'s operands, the bwdfilt's
// slices summed in clusters (`clusters` "1") or by the second pass ("0").
std::vector<unsigned char> bwdfilt_output(const OpDescriptor& d, const test::HostOperands& host,
                                          const char* clusters,
                                          std::string_view variant = kWgmmaVariant) {
  const test::SettingScope scope("CONVJIT_WGMMA_CLUSTER_SUMS", clusters);
  EmulatorBackend backend;
  BuildTrace trace;
  auto kernel = backend.build_variant(d, kHost, variant, trace);
  EXPECT_TRUE(kernel.is_ok()) << kernel.status().message();
  std::vector<unsigned char> out = host.out;
  if (!kernel.is_ok()) return out;
  const Status s = kernel.value()->execute(host.args(d, out.data()));
  EXPECT_TRUE(s.is_ok()) << s.message();
  return out;
}

// A bwdfilt of 2 to 8 slices adds them in each tile's cluster: the
// slices are the cluster's blocks, which stage their f32 sums in shared
// memory and add each pair of weights on one of them, in slice order,
// through distributed shared memory: one kernel, no workspace, and the
// same bits as the second pass's sum.  Over 2 to 8 slices, tiles with and
// without a second 64 filters, K C R S and K R S C filters, 1D to 3D,
// alpha and beta; beyond 8, whole clusters whose sums the second pass adds.
// Into K C R S dw too: each block stores its share of the tile, where a
// tile's block alone stores a partial sum for the second pass to lay out
// (AHopperBwdfiltWritesKcrsDwAlongItsTaps).
TEST(EmulatedWgmmaConv, ATilesClusterAddsItsSlices) {
  std::mt19937 rng(4309);
  struct SlicedConv {
    test::ConvCase conv;
    long long slices;
  };
  std::vector<SlicedConv> cases;
  // 16 filters (no second 64) of 24 channels, 3 x 3: 5 tiles, 65 steps.
  cases.push_back({channels_last_3x3(24, 16, {40, 52}, {1, 1}, {1, 1}), 8});
  cases.back().conv.filter_layout = test::TestLayout::nchw;
  // 200 filters: two filter tiles, each with a second 64; 39 steps.
  cases.push_back({channels_last_3x3(72, 200, {40, 32}, {0, 1}, {2, 0}), 4});
  // 1D, 96 filters of 40 channels, stride 2: 2 tiles, 56 steps.
  test::ConvCase one_d;
  one_d.batch = 4, one_d.channels = 40, one_d.filters = 96, one_d.input = {1795};
  one_d.kernel = {3}, one_d.stride = {2}, one_d.dilation = {1};
  one_d.pad_begin = {1}, one_d.pad_end = {0};
  one_d.layout = test::TestLayout::nhwc, one_d.filter_layout = test::TestLayout::nhwc;
  cases.push_back({one_d, 7});
  // 3D, 1 x 1 x 1, 72 filters of 24 channels: 1 tile, 68 steps.
  test::ConvCase three_d;
  three_d.batch = 2, three_d.channels = 24, three_d.filters = 72, three_d.input = {6, 15, 24};
  three_d.kernel = {1, 1, 1}, three_d.stride = {1, 1, 1}, three_d.dilation = {1, 1, 1};
  three_d.pad_begin = {0, 0, 0}, three_d.pad_end = {0, 0, 0};
  three_d.layout = test::TestLayout::nhwc, three_d.filter_layout = test::TestLayout::nchw;
  cases.push_back({three_d, 8});
  for (std::size_t i = 0; i < cases.size(); ++i) {
    // A reduced run: the first (8 slices, no second 64 filters) and the
    // last (8 slices, 3D).
    if (test::reduced_run() && i != 0 && i + 1 != cases.size()) continue;
    const SlicedConv& k = cases[i];
    for (const DataType dtype : {i % 2 == 0 ? DataType::bf16 : DataType::f16}) {
      const OpDescriptor d = bwdfilt(k.conv, dtype);
      SCOPED_TRACE(descriptor_name(d));
      const WgmmaConvLaunch launch = wgmma_conv_launch(d, kWgmmaConfigs[0]);
      ASSERT_EQ(launch.split, k.slices);
      EXPECT_EQ(launch.cluster_slices, k.slices);
      auto source = kernel_source(d, kWgmmaVariant);
      ASSERT_TRUE(source.is_ok()) << source.status().message();
      ASSERT_EQ(source.value().entries.size(), 1u)
          << "no second pass: " << source.value().entries.back().name;
      EXPECT_EQ(source.value().entries[0].cluster_blocks, k.slices);
      EXPECT_EQ(source.value().entries[0].tiles % k.slices, 0);
      EXPECT_EQ(source.value().workspace_bytes, 0u);
      EXPECT_NE(source.value().source.find(fmt::format("SUM_IN_CLUSTER = {};", k.slices)),
                std::string::npos);
      check(d, rng, 0.5, 0.25);
      const test::HostOperands host = test::random_operands(d, rng, 0.75, -0.5);
      EXPECT_EQ(bwdfilt_output(d, host, "1"), bwdfilt_output(d, host, "0"))
          << "the clusters' sums are the second pass's";
    }
  }
  // In slice order: a 1 x 1 conv of 6 slices of 512 pixels whose products
  // are 2^20 a pixel in the first two slices, then -2^20, then 2^-6, dy
  // all ones.  Added in order, the first four cancel and dw is 16; added
  // in any other order, f32 rounds the 16 away against 2^30.
  test::ConvCase ordered;
  ordered.batch = 1, ordered.channels = 8, ordered.filters = 8, ordered.input = {48, 64};
  ordered.kernel = {1, 1}, ordered.stride = {1, 1}, ordered.dilation = {1, 1};
  ordered.pad_begin = {0, 0}, ordered.pad_end = {0, 0};
  ordered.layout = test::TestLayout::nhwc, ordered.filter_layout = test::TestLayout::nhwc;
  const OpDescriptor in_order = bwdfilt(ordered, DataType::bf16);
  ASSERT_EQ(wgmma_conv_launch(in_order, kWgmmaConfigs[0]).split, 6);
  test::HostOperands host = test::random_operands(in_order, rng);
  const auto put = [](std::vector<unsigned char>& bytes, std::size_t i, float v) {
    const std::uint16_t bits = float_to_bf16(v).bits;
    std::memcpy(&bytes[2 * i], &bits, sizeof bits);
  };
  for (std::size_t pixel = 0; pixel < 48 * 64; ++pixel)
    for (std::size_t c = 0; c < 8; ++c) {
      const float slice_value[] = {1024.0f, -1024.0f, 1.0f / 64};
      put(host.x, pixel * 8 + c, slice_value[pixel / 1024]);
      put(host.dy, pixel * 8 + c, pixel < 2048 ? 1024.0f : 1.0f);
    }
  const std::vector<unsigned char> summed = bwdfilt_output(in_order, host, "1");
  EXPECT_EQ(summed, bwdfilt_output(in_order, host, "0"));
  for (std::size_t i = 0; i < 64; ++i) {
    std::uint16_t bits = 0;
    std::memcpy(&bits, &summed[2 * i], sizeof bits);
    ASSERT_EQ(bits, float_to_bf16(16.0f).bits) << "weight " << i;
  }

  // More slices than a cluster's 8: whole clusters.  A 1 x 1 conv of 8
  // channels and 16 filters, one tile of 96, 160 and 192 steps: up to 12,
  // 20 and 24 slices of 8 steps, which become 8 (one cluster, no second
  // pass), 16 and 24 (2 and 3 clusters, each storing its sum as a partial
  // sum that the second pass adds).
  struct Clusters {
    std::vector<std::int64_t> image;
    long long slices, clusters;
  };
  for (const Clusters& k :
       {Clusters{{64, 48}, 8, 1}, Clusters{{80, 64}, 16, 2}, Clusters{{96, 64}, 24, 3}}) {
    if (test::reduced_run() && k.clusters == 2) continue;
    test::ConvCase one_tile = ordered;
    one_tile.batch = 2, one_tile.filters = 16, one_tile.input = k.image;
    const OpDescriptor d = bwdfilt(one_tile, DataType::bf16);
    SCOPED_TRACE(descriptor_name(d));
    const WgmmaConvLaunch launch = wgmma_conv_launch(d, kWgmmaConfigs[0]);
    EXPECT_EQ(launch.split, k.slices);
    EXPECT_EQ(launch.cluster_slices, 8);
    EXPECT_EQ(launch.entries.front().cluster_blocks, 8u);
    EXPECT_EQ(launch.entries.back().name,
              k.clusters > 1 ? "convjit_kernel_finish" : "convjit_kernel");
    EXPECT_EQ(launch.workspace_bytes, k.clusters > 1 ? 16u * 8 * sizeof(float) * k.clusters : 0u);
    check(d, rng, 0.5, 0.25);
    if (k.clusters == 1) {
      const test::SettingScope second_pass("CONVJIT_WGMMA_CLUSTER_SUMS", "0");
      EXPECT_EQ(wgmma_conv_launch(d, kWgmmaConfigs[0]).split, 12) << "not rounded to clusters";
    }
  }
}

// The slices of a fwd's or bwddata's K (split-K) its launch cuts, its
// workspace (the filters' copy, then a tile of f32 partial sums a block)
// and second pass; the conv must be its lead variant's.
constexpr std::string_view kHalfTile = kWgmmaConfigs[2].id;
struct Slicing {
  long long split, tiles;
  std::size_t workspace;
};
Slicing slicing(const OpDescriptor& d, std::string_view variant) {
  auto source = kernel_source(d, variant);
  EXPECT_TRUE(source.is_ok()) << source.status().message();
  if (!source.is_ok()) return {};
  const KernelSource& s = source.value();
  const auto split = s.source.find("SPLIT = ");
  EXPECT_NE(split, std::string::npos);
  Slicing out{std::stoll(s.source.substr(split + 8)), 0, s.workspace_bytes};
  if (out.split > 1) {
    EXPECT_EQ(s.entries.back().name, "convjit_kernel_finish");
    out.tiles = s.entries[s.entries.size() - 2].tiles / out.split;
    // A thread per 8 of a tile's pixels x N elements.
    const WgmmaConvConfig& config = *find_wgmma_config(s.variant);
    const long long filters = std::stoll(s.source.substr(s.source.find("TILE_N = ") + 9));
    EXPECT_EQ(s.entries.back().threads, out.tiles * config.pixels * filters / 8);
  }
  return out;
}

// Where a fwd's or bwddata's tiles leave most of the GPU's block slots
// idle, its K is cut into slices (a partial sum per slice, added in
// slice order by the second pass, which applies the epilogue): as many
// as fit in one wave of 264 slots, each at least 32 K steps, or 16 where
// the tiles fill a quarter of the slots or less.  fwd with
// K R S C filters (no copy: the partial sums open the workspace) and
// K C R S (after the copy, 256-byte aligned), with the fused epilogue,
// alpha/beta and a bias and residual off a 16-byte boundary; stride-1
// and strided bwddata, over several tiles of pixels and channels.
TEST(EmulatedWgmmaConv, SlicesTheReductionWhereTheTilesLeaveTheGpuIdle) {
  std::mt19937 rng(4311);
  constexpr std::string_view kTwoBlocks = kWgmmaConfigs[1].id;
  // 48 pixels by 136 filters: 2 tiles; 456 channels: 8 blocks x 9 taps.
  test::ConvCase c = channels_last_3x3(456, 136, {9, 7}, {1, 0}, {0, 1});
  c.batch = 1;
  OpDescriptor d = fwd(c, DataType::bf16);
  Slicing s = slicing(d, kTwoBlocks);
  EXPECT_EQ(s.split, 4) << "72 steps / 16";
  EXPECT_EQ(s.tiles, 2);
  EXPECT_EQ(s.workspace, 4u * 2 * 128 * 128 * sizeof(float));
  d.activation = Activation::silu;
  d.epilogue_operands = kEpilogueBias | kEpilogueResidual;
  check(d, rng, 0.5, 0.25, kTwoBlocks, 2);
  c.filter_layout = test::TestLayout::nchw;
  d = fwd(c, DataType::f16);
  s = slicing(d, kWgmmaVariant);
  EXPECT_EQ(s.split, 4);
  const std::size_t copy = (456 * 136 * 9 * 2 + 255) / 256 * 256;
  EXPECT_EQ(s.workspace, copy + 4u * 2 * 128 * 128 * sizeof(float));
  check(d, rng, 1.0, 0.0, kWgmmaVariant);
  // bwddata of stride 1: dx's 456 channels are 4 tiles of 128; dy's 264
  // filters 5 blocks x 9 taps, two slices.
  c = channels_last_3x3(456, 264, {9, 7}, {1, 1}, {1, 1});
  c.batch = 1;
  EXPECT_EQ(slicing(bwddata(c, DataType::bf16), kTwoBlocks).split, 2);
  check(bwddata(c, DataType::bf16), rng, 0.5, 0.25, kTwoBlocks);
  // Strided (stride phases): 5 x 5 taps of stride 2, 9, 6, 6 and 4 a
  // phase, by 8 blocks of dy's 512 filters: 72, 48, 48 and 32 steps, 50
  // on average, 3 slices; a tile a phase.
  c = channels_last_3x3(72, 512, {9, 10}, {2, 2}, {2, 1});
  c.batch = 1, c.kernel = {5, 5}, c.stride = {2, 2};
  const OpDescriptor phased = bwddata(c, DataType::bf16);
  EXPECT_EQ(slicing(phased, kTwoBlocks).split, 3);
  check(phased, rng, 1.0, 0.5, kTwoBlocks);
  // A wave's half or more of tiles, or slices under 32 steps where the
  // tiles fill over a quarter of it: one slice.
  c = channels_last_3x3(456, 136, {16, 16}, {1, 1}, {1, 1});
  c.batch = 66;  // 264 tiles of 128 x 128
  EXPECT_EQ(slicing(fwd(c, DataType::bf16), kTwoBlocks).split, 1);
  c.batch = 33;  // 132: two slices fill the wave
  EXPECT_EQ(slicing(fwd(c, DataType::bf16), kTwoBlocks).split, 2);
  EXPECT_EQ(slicing(fwd(c, DataType::bf16), kWgmmaVariant).split, 1) << "132 slots";
  c.channels = 448;  // 7 blocks x 9 taps: 63 steps, under two slices of 32
  EXPECT_EQ(slicing(fwd(c, DataType::bf16), kTwoBlocks).split, 1);
  c.batch = 16;  // 64 tiles, a quarter of the slots: slices of 16
  EXPECT_EQ(slicing(fwd(c, DataType::bf16), kTwoBlocks).split, 3);
  c.batch = 17;  // 68 tiles
  EXPECT_EQ(slicing(fwd(c, DataType::bf16), kTwoBlocks).split, 1);
}

// A conv whose few pixels and long reduction of 16 channels split-K
// slices: 2 x 3 x 3 pixels of a 5 x 5 x 5 window, 125 K steps of 16
// channels, 24 filters, bf16.
OpDescriptor sliced_narrow_conv() {
  test::ConvCase c = channels_last_3x3(16, 24, {6, 7, 6}, {2, 2, 2}, {2, 2, 2});
  c.batch = 1, c.kernel = {5, 5, 5}, c.stride = {2, 2, 2}, c.dilation = {1, 1, 1};
  return fwd(c, DataType::bf16);
}

// The K step follows the channels the conv reduces (a fwd's C, a
// bwddata's K, a folded stem's C'): 16 up to 16, 32 up to 32, else 64, so
// that a stage holds no zero fill beyond them.  Its boxes' rows (map 0's
// pixels, map 1's filters; an MN-major box's K) are the step's channels,
// swizzled by their bytes; the ring takes as many more stages as the step
// is narrower, within the 16 mbarriers.  Each conv matches the reference
// in a configuration of its own, every configuration in turn: fwd of 1D,
// 2D and 3D windows with strides, dilations and padding; bwddata of
// stride 1 (K R S C filters in place, MN-major, and K C R S ones copied)
// and strided; a folded stem of 21 channels (24: a step of 32); split-K's
// slices of 16-channel steps.
TEST(EmulatedWgmmaConv, StepsByTheChannelsTheConvReduces) {
  std::mt19937 rng(4340);
  struct Expected {
    std::int64_t channels;
    long long step;
    TensorMapSwizzle swizzle;
  };
  const Expected expected[] = {{8, 16, TensorMapSwizzle::b32},   {16, 16, TensorMapSwizzle::b32},
                               {24, 32, TensorMapSwizzle::b64},  {32, 32, TensorMapSwizzle::b64},
                               {40, 64, TensorMapSwizzle::b128}, {64, 64, TensorMapSwizzle::b128}};
  // Every configuration in turn but the row-tap tiles (64-channel steps
  // only: RowTapTile); a strided bwddata's tiles are its phases', never
  // clusters'.
  std::size_t turn = 0;
  const auto next = [&](bool phased) -> const WgmmaConvConfig& {
    const WgmmaConvConfig* config = &kWgmmaConfigs[turn++ % std::size(kWgmmaConfigs)];
    while (config->row_taps || config->cluster_pixels || (phased && config->cluster > 1))
      config = &kWgmmaConfigs[turn++ % std::size(kWgmmaConfigs)];
    return *config;
  };
  for (const Expected& e : expected) {
    const int at = static_cast<int>(&e - expected);
    test::ConvCase c = test::random_channels_last_conv(rng, 1 + at % 3);
    c.channels = e.channels;
    SCOPED_TRACE(c.describe());
    const OpDescriptor d = fwd(c, at % 2 ? DataType::f16 : DataType::bf16);
    EXPECT_EQ(wgmma_step_channels(d), e.step);
    const WgmmaConvConfig& config = next(false);
    auto source = kernel_source(d, config.id);
    ASSERT_TRUE(source.is_ok()) << source.status().message();
    const KernelSource& k = source.value();
    EXPECT_NE(k.source.find(fmt::format("STEP = {}", e.step)), std::string::npos);
    EXPECT_NE(k.source.find(fmt::format("STAGES = {}", config.stages_at(e.step))),
              std::string::npos);
    WgmmaConvConfig fitted = config;  // a 64-filter tile of 32 filters or fewer: N = 32
    fitted.filters = wgmma_conv_launch(d, config).filters;
    EXPECT_EQ(k.entries.back().dynamic_shared_bytes, fitted.shared_bytes(e.step));
    EXPECT_EQ(k.tensor_maps.at(0).spec.channels_per_pixel, static_cast<unsigned>(e.step));
    EXPECT_EQ(k.tensor_maps.at(0).spec.swizzle, e.swizzle);
    EXPECT_EQ(k.tensor_maps.at(1).spec.box[0], static_cast<unsigned>(e.step));
    EXPECT_EQ(k.tensor_maps.at(1).spec.swizzle, e.swizzle);
    check(d, rng, 1.0, at == 3 ? 0.5 : 0.0, config.id);
    // The same channels as a bwddata's dy: stride 1, then strided.
    c.filters = e.channels;
    c.stride.assign(c.input.size(), 1);
    const OpDescriptor back = bwddata(c, DataType::bf16);
    EXPECT_EQ(wgmma_step_channels(back), e.step);
    check(back, rng, 0.5, 0.25, next(false).id);
    c.stride[0] = 2;
    if (const OpDescriptor phased = bwddata(c, DataType::bf16); wgmma_conv_support(phased).is_ok())
      check(phased, rng, 1.0, 0.0, next(true).id);
  }
  EXPECT_EQ(wgmma_step_channels(
                bwdfilt(channels_last_3x3(16, 16, {8, 8}, {1, 1}, {1, 1}), DataType::bf16)),
            64)
      << "a bwdfilt steps by pixels";
  // A bwddata's K R S C filters in place: MN-major boxes of 64 channels
  // by the step's 16 filters.
  test::ConvCase few = channels_last_3x3(72, 16, {7, 9}, {1, 0}, {1, 2});
  const OpDescriptor in_place = bwddata(few, DataType::bf16);
  auto source = kernel_source(in_place, kWgmmaVariant);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  EXPECT_NE(source.value().source.find("FILTERS_MN = 1"), std::string::npos);
  EXPECT_EQ(source.value().tensor_maps.at(1).spec.box[0], 64u);
  EXPECT_EQ(source.value().tensor_maps.at(1).spec.box[4], 16u);
  EXPECT_EQ(source.value().tensor_maps.at(1).spec.swizzle, TensorMapSwizzle::b128);
  check(in_place, rng, 1.0, 0.0, kWgmmaConfigs[2].id);
  few.filter_layout = test::TestLayout::nchw;
  check(bwddata(few, DataType::f16), rng, 1.0, 0.0, kWgmmaConfigs[6].id);
  // ResNet-50's stem folded: 7 taps of 3 channels, 24 after rounding.
  const OpDescriptor stem = fwd(test::small_resnet50_stem(), DataType::bf16);
  EXPECT_EQ(wgmma_step_channels(stem), 32);
  check(stem, rng, 1.0, 0.0, kWgmmaConfigs[1].id);
  // Split-K over 16-channel steps: 125 steps in 7 slices of at least 16.
  const OpDescriptor sliced = sliced_narrow_conv();
  EXPECT_EQ(slicing(sliced, kWgmmaConfigs[1].id).split, 7);
  check(sliced, rng, 0.5, 0.25, kWgmmaConfigs[1].id);
}

// A 64-filter tile's N is 32 where the output has 32 channels or fewer
// (y's, a bwddata's dx's) and B is read K-major: map 1's boxes of 32
// filters, the ring's and the staged tile's memory for N = 32, the
// wgmmas m64n32.  Each conv matches the reference: fwd of 8 to 32
// filters in the three 64-filter configurations, with the fused epilogue,
// alpha/beta and split-K's partial sums; bwddata of 24 channels, strided
// and of stride 1 with K C R S filters (a packed copy).  33 filters, a
// bwddata reading K R S C filters in place (MN-major boxes of 64), and
// the 128-filter tiles keep their N.
TEST(EmulatedWgmmaConv, NarrowsTheHalfTileWhereItWouldPadHalfItsFilters) {
  std::mt19937 rng(4350);
  const auto tile_n = [](const OpDescriptor& d, const WgmmaConvConfig& config) {
    return wgmma_conv_launch(d, config).filters;
  };
  const WgmmaConvConfig &half = kWgmmaConfigs[2], &wide_half = kWgmmaConfigs[4],
                        &half_ping_pong = kWgmmaConfigs[6];
  int turn = 0;
  for (const std::int64_t filters : {8, 16, 24, 32}) {
    test::ConvCase c = test::random_channels_last_conv(rng, 1 + turn % 3);
    c.filters = filters;
    SCOPED_TRACE(c.describe());
    OpDescriptor d = fwd(c, turn % 2 ? DataType::f16 : DataType::bf16);
    if (turn % 2 == 0) {
      d.activation = Activation::silu;
      d.epilogue_operands = kEpilogueBias | kEpilogueResidual;
    }
    const WgmmaConvConfig& config = turn % 3 == 0   ? half
                                    : turn % 3 == 1 ? wide_half
                                                    : half_ping_pong;
    ++turn;
    EXPECT_EQ(tile_n(d, config), 32);
    auto source = kernel_source(d, config.id);
    ASSERT_TRUE(source.is_ok()) << source.status().message();
    const KernelSource& k = source.value();
    EXPECT_NE(k.source.find("TILE_N = 32"), std::string::npos);
    EXPECT_EQ(k.tensor_maps.at(1).spec.box[4], 32u);
    WgmmaConvConfig narrow = config;
    narrow.filters = 32;
    EXPECT_EQ(k.entries.back().dynamic_shared_bytes, narrow.shared_bytes(wgmma_step_channels(d)));
    check(d, rng, 1.0, turn == 2 ? 0.5 : 0.0, config.id);
  }
  // Split-K: the finish pass adds 128 x 32 partial sums a tile.
  const OpDescriptor sliced = sliced_narrow_conv();
  EXPECT_EQ(tile_n(sliced, half), 32);
  EXPECT_GT(slicing(sliced, half.id).split, 1);
  check(sliced, rng, 0.5, 0.25, half.id);
  // bwddata: dx's 24 channels; K C R S filters through the packed copy.
  test::ConvCase back = channels_last_3x3(24, 48, {9, 8}, {1, 0}, {1, 2});
  back.filter_layout = test::TestLayout::nchw;
  EXPECT_EQ(tile_n(bwddata(back, DataType::bf16), half_ping_pong), 32);
  check(bwddata(back, DataType::bf16), rng, 1.0, 0.5, half_ping_pong.id);
  back.stride = {2, 2};
  EXPECT_EQ(tile_n(bwddata(back, DataType::bf16), half), 32);
  check(bwddata(back, DataType::bf16), rng, 1.0, 0.0, half.id);
  // What keeps its N.
  back.stride = {1, 1};
  back.filter_layout = test::TestLayout::nhwc;
  EXPECT_EQ(tile_n(bwddata(back, DataType::bf16), half), 64) << "w in place, MN-major";
  test::ConvCase wide = channels_last_3x3(24, 33, {9, 8}, {1, 1}, {1, 1});
  EXPECT_EQ(tile_n(fwd(wide, DataType::bf16), half), 64);
  wide.filters = 16;
  EXPECT_EQ(tile_n(fwd(wide, DataType::bf16), kWgmmaConfigs[1]), 128);
  EXPECT_EQ(tile_n(fwd(wide, DataType::bf16), kWgmmaConfigs[5]), 128);
}

// `count` random convs of `batch` images (0: theirs) in `variant`: fwd in
// f16 and bf16, every other with the fused epilogue (one with its
// operands 2 bytes off 16), one with beta; bwddata of stride 1 with
// alpha/beta, and strided (by phases) where TMA's offsets reach.
// The first three random convs take every case of the loop below (1D,
// 2D and 3D, f16 and bf16, the fused epilogue, beta, a misaligned
// operand); the sanitizer pass runs those three only.
int random_convs(int count) { return test::reduced_run() ? 3 : count; }

void check_random_convs(std::mt19937& rng, std::string_view variant, int count,
                        std::int64_t batch = 0) {
  for (int i = 0; i < count; ++i) {
    test::ConvCase c = test::random_channels_last_conv(rng, 1 + i % 3);
    if (batch > 0) c.batch = batch;
    SCOPED_TRACE(c.describe());
    OpDescriptor d = fwd(c, i % 2 ? DataType::f16 : DataType::bf16);
    if (i % 2 == 0) {
      d.activation = Activation::silu;
      d.epilogue_operands = kEpilogueBias | kEpilogueResidual;
    }
    check(d, rng, 1.0, i == 1 ? 0.5 : 0.0, variant, i == 2 ? 2 : 0);
    c.filters = 8 * (1 + i);
    c.stride.assign(c.input.size(), 1);
    check(bwddata(c, DataType::bf16), rng, 0.5, 0.25, variant);
    c.stride[0] = 2;
    const OpDescriptor phased = bwddata(c, DataType::bf16);
    if (wgmma_conv_support(phased, *find_wgmma_config(variant)).is_ok())
      check(phased, rng, 1.0, 0.0, variant);
  }
}

// The tiles of two consumer warpgroups, 256 x 128 and 256 x 64 (384
// threads, one block an SM; A's 256 pixels in one im2col box, B's filters
// shared): their launch, then random convs fwd (some with the fused
// epilogue) and bwddata of stride 1 and strided, alpha/beta; pixels over
// several tiles whose last one leaves the second consumer's rows, or some
// of them, past the end; filters over several tiles; split-K's partial
// sums of 256 rows; and the bwdfilt, which they do not serve, refused by
// name.
class TwoConsumerTile : public ::testing::TestWithParam<WgmmaConvConfig> {};

TEST_P(TwoConsumerTile, MatchesTheReference) {
  const WgmmaConvConfig& wide = GetParam();
  std::mt19937 rng(4312);
  ASSERT_EQ(wide.consumers(), 2);
  const long long n = wide.filters;
  test::ConvCase c = channels_last_3x3(72, 136, {19, 17}, {1, 0}, {1, 2});
  auto source = kernel_source(fwd(c, DataType::bf16), wide.id);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  const KernelEntry& main = source.value().entries.back();
  EXPECT_EQ(main.threads_per_block, 384u);
  EXPECT_EQ(main.tiles, 3 * (136 + n - 1) / n) << "646 pixels by 136 filters";
  EXPECT_EQ(main.dynamic_shared_bytes, static_cast<std::size_t>(wide.stages * (256 + n) * 64 * 2));
  EXPECT_LE(main.dynamic_shared_bytes, kOptInSharedLimit);
  EXPECT_EQ(source.value().tensor_maps[0].spec.pixels_per_column, 256u);
  EXPECT_NE(source.value().source.find("CONSUMERS = 2"), std::string::npos);
  check(fwd(c, DataType::bf16), rng, 1.0, 0.0, wide.id);
  check_random_convs(rng, wide.id, random_convs(5), 3);
  // 48 pixels by 136 filters: a tile of pixels for 132 slots; 72 K steps, slices of 16.
  c = channels_last_3x3(456, 136, {9, 7}, {1, 0}, {0, 1});
  c.batch = 1;
  const Slicing s = slicing(fwd(c, DataType::bf16), wide.id);
  const long long tiles = (136 + n - 1) / n;
  EXPECT_EQ(s.split, 4);
  EXPECT_EQ(s.workspace, static_cast<std::size_t>(4 * tiles * 256 * n) * sizeof(float));
  check(fwd(c, DataType::bf16), rng, 0.5, 0.25, wide.id);
  c.batch = 6;  // 378 pixels: the second consumer's rows partly past the end
  c.filter_layout = test::TestLayout::nchw;
  check(fwd(c, DataType::f16), rng, 1.0, 0.0, wide.id);
  const Status refused = check_variant(bwdfilt(c, DataType::bf16), wide.id, {"sm_90", false});
  EXPECT_NE(refused.message().find("a bwdfilt's tile is 128 filters"), std::string::npos)
      << refused.message();
}

INSTANTIATE_TEST_SUITE_P(EmulatedWgmmaConv, TwoConsumerTile,
                         ::testing::Values(kWgmmaConfigs[3], kWgmmaConfigs[4]),
                         [](const auto& p) { return std::string(p.param.id); });

// The 128 x 256 tile (wgmma128x256): two consumer warpgroups along the
// filters, 128 each, sharing each stage's 128 pixels of A.  Its launch
// (384 threads, map 1's box of 256 filters, both consumers' staged
// tiles); fwd of 300 filters, whose second tile leaves the second
// consumer nothing and the first 44 filters, with the fused epilogue and
// alpha/beta; 200 filters (the second consumer's partly past the end)
// through the K C R S filters' copy; random convs fwd and bwddata;
// bwddata of stride 1 reading its K R S C filters in place (four MN-major
// boxes a step, each consumer reading its two) and strided; split-K's
// partial sums, 256 wide, each consumer its half; the bwdfilt refused by
// name.
TEST(EmulatedWgmmaConv, FilterWideTileSharesItsPixelsBetweenTwoConsumers) {
  const WgmmaConvConfig& tile = kWgmmaConfigs[8];
  std::mt19937 rng(4313);
  ASSERT_EQ(tile.id, "wgmma128x256");
  ASSERT_EQ(tile.consumers(), 2);
  test::ConvCase c = channels_last_3x3(72, 300, {19, 17}, {1, 0}, {1, 2});
  auto source = kernel_source(fwd(c, DataType::bf16), tile.id);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  const KernelEntry& main = source.value().entries.back();
  EXPECT_EQ(main.threads_per_block, 384u);
  EXPECT_EQ(main.tiles, 6 * 2) << "646 pixels by 300 filters";
  EXPECT_EQ(main.dynamic_shared_bytes,
            static_cast<std::size_t>(tile.stages * (128 + 256) * 64 * 2));
  EXPECT_GE(main.dynamic_shared_bytes, static_cast<std::size_t>(128 * 256 * 4 + 128 * 8))
      << "the ring holds both consumers' staged tiles";
  EXPECT_EQ(source.value().tensor_maps[0].spec.pixels_per_column, 128u);
  EXPECT_EQ(source.value().tensor_maps[1].spec.box[4], 256u);
  EXPECT_NE(source.value().source.find("CONSUMERS = 2"), std::string::npos);
  EXPECT_NE(source.value().source.find("TILE_N = 256"), std::string::npos);
  OpDescriptor d = fwd(c, DataType::bf16);
  d.activation = Activation::silu;
  d.epilogue_operands = kEpilogueBias | kEpilogueResidual;
  check(d, rng, 0.5, 0.25, tile.id);
  c.filters = 200;
  c.filter_layout = test::TestLayout::nchw;
  check(fwd(c, DataType::f16), rng, 1.0, 0.0, tile.id);
  check_random_convs(rng, tile.id, random_convs(4), 3);
  // dx of 200 channels from dy of 72: K R S C filters in place, then strided.
  c = channels_last_3x3(200, 72, {11, 9}, {1, 0}, {1, 2});
  ASSERT_NE(
      kernel_source(bwddata(c, DataType::bf16), tile.id).value().source.find("FILTERS_MN = 1"),
      std::string::npos);
  check(bwddata(c, DataType::bf16), rng, 1.0, 0.5, tile.id);
  c.stride = {2, 2};
  check(bwddata(c, DataType::bf16), rng, 1.0, 0.0, tile.id);
  // 48 pixels by 264 filters, 72 K steps: one tile of pixels, sliced.
  c = channels_last_3x3(456, 264, {9, 7}, {1, 0}, {0, 1});
  c.batch = 1;
  const Slicing s = slicing(fwd(c, DataType::bf16), tile.id);
  EXPECT_GT(s.split, 1);
  EXPECT_EQ(s.workspace, static_cast<std::size_t>(s.split * 2 * 128 * 256) * sizeof(float));
  check(fwd(c, DataType::bf16), rng, 0.5, 0.25, tile.id);
  const Status refused = check_variant(bwdfilt(c, DataType::bf16), tile.id, {"sm_90", false});
  EXPECT_NE(refused.message().find("a bwdfilt's tile is 128 filters"), std::string::npos)
      << refused.message();
}

// The ping-pong tiles, 128 x 128 and 128 x 64 (wgmma_conv.hpp): a
// persistent grid of at most a block an SM, whose two consumers take the
// block's tiles in turn and stage them outside the ring.
class PingPongTile : public ::testing::TestWithParam<WgmmaConvConfig> {};

// `d` in `variant` on a grid cut to `blocks`, its source adjusted by
// `adjust` first, against the reference (run_adjusted).
template <class Adjust>
void run_on_blocks(const OpDescriptor& d, std::mt19937& rng, std::string_view variant,
                   long long blocks, double alpha, double beta, Adjust adjust) {
  run_adjusted(d, rng, variant, alpha, beta, [&](KernelSource& source) {
    KernelEntry& main = source.entries.back();
    main.tiles = blocks;
    main.threads = blocks * main.threads_per_block;
    adjust(source);
  });
}

// `d` with `variant`'s persistent grid cut to `blocks`, so that each
// block takes several tiles: the ring's steps and parities run on across
// them, and the consumers alternate, unevenly where the tiles do not
// divide.  Whole tiles, not Stream-K's parts (StreamKShares...).
void check_on_blocks(const OpDescriptor& d, std::mt19937& rng, std::string_view variant,
                     long long blocks, double alpha = 1.0, double beta = 0.0) {
  SCOPED_TRACE(fmt::format("{} on {} blocks: {}", variant, blocks, descriptor_name(d)));
  const test::SettingScope whole_tiles("CONVJIT_WGMMA_STREAM_K", "0");
  run_on_blocks(d, rng, variant, blocks, alpha, beta, [&](KernelSource& source) {
    EXPECT_GT(source.entries.back().persistent_tiles, 2 * blocks)
        << "too few tiles to take several a block";
  });
}

// Its launch; random convs fwd (some with the fused epilogue) and bwddata
// of stride 1 and strided, alpha/beta, on the grid it launches (a tile a
// block, as these are small); then grids of 3 and 2 blocks taking 5 to
// 24 tiles each: fwd, K C R S filters through the copy, a strided
// bwddata whose phases take different K steps, a 1x1 stride-2 one whose
// odd phases take none (the first pass writes them), and a 1x3 one of K
// C R S filters whose odd rows take none (copied filters: those tiles'
// turns pass without a main loop).  The
// bwdfilt, which it does not serve, refused by name.
TEST_P(PingPongTile, MatchesTheReference) {
  const WgmmaConvConfig& config = GetParam();
  std::mt19937 rng(4320);
  ASSERT_TRUE(config.ping_pong);
  const long long n = config.filters;
  test::ConvCase c = channels_last_3x3(72, 136, {19, 17}, {1, 0}, {1, 2});
  auto source = kernel_source(fwd(c, DataType::bf16), config.id);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  const KernelEntry& main = source.value().entries.back();
  const long long tiles = 6 * ((136 + n - 1) / n);  // 646 pixels by 136 filters
  EXPECT_EQ(main.threads_per_block, 384u);
  EXPECT_EQ(main.persistent_tiles, tiles);
  EXPECT_EQ(main.tiles, tiles) << "fewer tiles than SMs: a block each";
  EXPECT_EQ(main.dynamic_shared_bytes, static_cast<std::size_t>(config.stages * (128 + n) * 64 * 2 +
                                                                2 * (128 * n * 4 + 128 * 8)));
  EXPECT_LE(main.dynamic_shared_bytes, kOptInSharedLimit);
  EXPECT_EQ(source.value().tensor_maps[0].spec.pixels_per_column, 128u);
  EXPECT_NE(source.value().source.find("PINGPONG = 1"), std::string::npos);
  check(fwd(c, DataType::bf16), rng, 1.0, 0.0, config.id);
  check_random_convs(rng, config.id, random_convs(4));
  // 2 x 40 x 36 pixels: 23 tiles of pixels; 2 x 24 x 20, 8 of them, in a
  // reduced (sanitizer) run, still several a block.
  const std::vector<std::int64_t> image =
      test::reduced_run() ? std::vector<std::int64_t>{24, 20} : std::vector<std::int64_t>{40, 36};
  c = channels_last_3x3(72, 136, image, {1, 1}, {1, 1});
  check_on_blocks(fwd(c, DataType::bf16), rng, config.id, 3, 0.5, 0.25);
  c.filter_layout = test::TestLayout::nchw;
  check_on_blocks(fwd(c, DataType::f16), rng, config.id, 2);
  c.filter_layout = test::TestLayout::nhwc;
  c.stride = {2, 2};  // phases of 4, 2, 2 and 1 taps
  check_on_blocks(bwddata(c, DataType::bf16), rng, config.id, 3, 1.0, 0.5);
  // Three phases without taps, which the first pass writes: the tiles are
  // the fourth's alone, of the larger image in a reduced run too (720
  // pixels: 6 tiles of 128 x 128 on 2 blocks).
  test::ConvCase shortcut = c;
  shortcut.input = {40, 36};
  shortcut.kernel = {1, 1}, shortcut.pad_begin = {0, 0}, shortcut.pad_end = {0, 0};
  check_on_blocks(bwddata(shortcut, DataType::bf16), rng, config.id, 2);
  c.kernel = {1, 3}, c.pad_begin = {0, 1}, c.pad_end = {0, 1};     // H's odd phase without taps
  c.filter_layout = test::TestLayout::nchw;  // copied: the tiles write those phases
  check_on_blocks(bwddata(c, DataType::bf16), rng, config.id, 2);
  const Status refused = check_variant(bwdfilt(c, DataType::bf16), config.id, {"sm_90", false});
  EXPECT_NE(refused.message().find("in ping-pong; a bwdfilt's tile is 128 filters"),
            std::string::npos)
      << refused.message();
}

INSTANTIATE_TEST_SUITE_P(EmulatedWgmmaConv, PingPongTile,
                         ::testing::Values(kWgmmaConfigs[5], kWgmmaConfigs[6]),
                         [](const auto& p) { return std::string(p.param.id); });

// `d`'s Stream-K launch of `variant` on a grid cut to `blocks`, so that
// a block runs whole tiles between the parts at its ends, or (more blocks
// than tiles) one part of a tile.
void check_stream_k_on_blocks(const OpDescriptor& d, std::mt19937& rng, std::string_view variant,
                              long long blocks, double alpha = 1.0, double beta = 0.0) {
  SCOPED_TRACE(fmt::format("{} Stream-K on {} blocks: {}", variant, blocks, descriptor_name(d)));
  run_on_blocks(d, rng, variant, blocks, alpha, beta, [&](KernelSource& source) {
    EXPECT_GT(source.entries.back().persistent_units, 0) << "not a Stream-K launch";
    // Its Problem::STREAM_K too, whose slots the counters follow.
    std::map<std::string, long long> constant;
    for (ProblemConstant& c : source.constants) {
      if (c.name == "STREAM_K") c.value = blocks;
      constant[c.name] = c.value;
    }
    source.zeroed_offset = static_cast<std::size_t>(
        (constant["PARTIALS"] + 2 * blocks * 128 * constant["TILE_N"]) * sizeof(float));
  });
}

// Stream-K: a ping-pong grid whose whole tiles would leave SMs idle (here
// 20 tiles of 128 x 64 for 132 SMs) shares the tiles' 27 K steps each
// evenly among 132 blocks, a tile's parts added by the last to finish.
// Its launch: 132 blocks, the units, the slots and then the counters in
// the workspace, which the launch finds zero and must leave zero (the
// emulator checks it), with no first pass, and the threads' store (the
// parts add up in its staging).  Against the reference: beta 0 and
// beta, a fused epilogue, a stride-1 bwddata, K C R S filters through the copy,
// the 128 x 128 tile; grids cut to 5 and 3 blocks (whole tiles between
// a block's parts) and to 50 (more blocks than tiles: a tile in 2 or 3
// parts).  It runs where CONVJIT_WGMMA_STREAM_K=1 asks; by default the
// grid keeps whole tiles.
TEST(EmulatedWgmmaConv, StreamKSharesTheTilesKStepsEvenlyAmongTheBlocks) {
  std::mt19937 rng(4410);
  const std::string_view half = kWgmmaConfigs[6].id, full = kWgmmaConfigs[5].id;
  test::ConvCase c = channels_last_3x3(136, 40, {40, 32}, {1, 1}, {1, 1});
  const OpDescriptor d = fwd(c, DataType::bf16);
  const WgmmaConvLaunch whole = wgmma_conv_launch(d, kWgmmaConfigs[6]);
  EXPECT_EQ(whole.stream_k, 0);
  EXPECT_EQ(whole.entries.back().tiles, 20);
  EXPECT_EQ(whole.zeroed_bytes, 0u);
  const test::SettingScope stream_k("CONVJIT_WGMMA_STREAM_K", "1");
  auto source = kernel_source(d, half);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  const KernelSource& launch = source.value();
  ASSERT_EQ(launch.entries.size(), 1u) << "no first pass: the counters clean themselves";
  constexpr long long kHopperSms = 132;  // an H100's or H200's SMs: the grid
  EXPECT_EQ(launch.entries[0].tiles, kHopperSms);
  EXPECT_EQ(launch.entries[0].persistent_tiles, 20);
  EXPECT_EQ(launch.entries[0].persistent_units, 20 * 27);
  EXPECT_NE(launch.source.find("STREAM_K = 132"), std::string::npos);
  EXPECT_EQ(launch.zeroed_offset, 2 * 132 * 128 * 64 * sizeof(float)) << "after the slots";
  EXPECT_EQ(launch.zeroed_bytes, 20 * sizeof(float)) << "a counter a tile";
  EXPECT_EQ(launch.workspace_bytes, launch.zeroed_offset + launch.zeroed_bytes);
  EXPECT_FALSE(stores_output_by_tma(launch.tensor_maps));
  EXPECT_TRUE(whole.tma_store);
  check(d, rng, 1.0, 0.0, half);
  check(d, rng, 0.5, 0.25, half);
  check_stream_k_on_blocks(d, rng, half, 5);
  check_stream_k_on_blocks(d, rng, half, 3, 0.5, 0.25);
  check_stream_k_on_blocks(d, rng, half, 50);
  OpDescriptor fused = d;
  fused.activation = Activation::silu;
  fused.epilogue_operands = kEpilogueBias | kEpilogueResidual;
  check(fused, rng, 1.0, 0.0, half);
  c.filter_layout = test::TestLayout::nchw;
  check_stream_k_on_blocks(fwd(c, DataType::f16), rng, half, 4);
  c.filter_layout = test::TestLayout::nhwc;
  std::swap(c.channels, c.filters);  // dx of 136 channels from dy of 40: 60 tiles of 9 steps
  ASSERT_GT(wgmma_conv_launch(bwddata(c, DataType::bf16), kWgmmaConfigs[6]).stream_k, 0);
  check_stream_k_on_blocks(bwddata(c, DataType::bf16), rng, half, 7, 1.0, 0.5);
  test::ConvCase wide = channels_last_3x3(136, 136, {28, 24}, {1, 1}, {1, 1});
  ASSERT_EQ(wgmma_conv_launch(fwd(wide, DataType::bf16), kWgmmaConfigs[5]).stream_k, kHopperSms);
  check_stream_k_on_blocks(fwd(wide, DataType::bf16), rng, full, 6);
}

// The 128 x 128 ping-pong tile in clusters of two (wgmma128x128pc): a
// cluster's blocks take neighbouring pixel tiles of one filter tile, the
// first loading their filters into both (TMA multicast) and waiting for
// both blocks' consumers to release each stage.  Its launch (clusters of
// 2; 5 pixel tiles rounded up to 6, whole clusters); random convs fwd and
// stride-1 bwddata on the grid it launches; then grids of one and two
// clusters taking several tiles each, where the last cluster's second
// block has no pixels (it loads its partner's and stores none): fwd with
// K R S C filters and, through the copy, K C R S, and a stride-1 bwddata
// reading its K R S C filters in place (MN-major boxes, each multicast;
// the sanitizer pass leaves out the random convs and the K C R S grid of
// two clusters, code that PingPongTile's random convs take there).  The
// strided bwddata and the bwdfilt, which it does not serve, refused by
// name.
TEST(EmulatedWgmmaConv, ClustersOfTwoShareTheirFilterTiles) {
  const WgmmaConvConfig& config = kWgmmaConfigs[7];
  std::mt19937 rng(4330);
  ASSERT_EQ(config.cluster, 2);
  // 2 x 17 x 17 = 578 pixels by 136 filters: 5 (6) pixel tiles by 2.
  test::ConvCase c = channels_last_3x3(72, 136, {17, 17}, {1, 1}, {1, 1});
  auto source = kernel_source(fwd(c, DataType::bf16), config.id);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  const KernelEntry& main = source.value().entries.back();
  EXPECT_EQ(main.cluster_blocks, 2u);
  EXPECT_EQ(main.persistent_tiles, 12);
  EXPECT_EQ(main.tiles, 12) << "fewer tiles than SMs: a block each";
  EXPECT_EQ(main.threads_per_block, 384u);
  EXPECT_NE(source.value().source.find("CLUSTER = 2"), std::string::npos);
  check(fwd(c, DataType::bf16), rng, 1.0, 0.0, config.id);
  if (!test::reduced_run()) check_random_convs(rng, config.id, 4);
  check_on_blocks(fwd(c, DataType::bf16), rng, config.id, 2, 0.5, 0.25);
  c.filter_layout = test::TestLayout::nchw;
  if (!test::reduced_run()) check_on_blocks(fwd(c, DataType::f16), rng, config.id, 4);
  c.filter_layout = test::TestLayout::nhwc;
  c.channels = 136, c.filters = 72;  // dx's 136 channels: 2 tiles of 128
  check_on_blocks(bwddata(c, DataType::bf16), rng, config.id, 2, 1.0, 0.5);
  c.stride = {2, 2};
  const Status strided = check_variant(bwddata(c, DataType::bf16), config.id, {"sm_90", false});
  EXPECT_NE(strided.message().find("a strided bwddata's tiles are its stride phases'"),
            std::string::npos)
      << strided.message();
  const Status refused = check_variant(bwdfilt(c, DataType::bf16), config.id, {"sm_90", false});
  EXPECT_NE(refused.message().find("in ping-pong; a bwdfilt's tile is 128 filters"),
            std::string::npos)
      << refused.message();
}

// The ping-pong tiles in clusters that share their pixel tile (the `pa`
// variants: WgmmaConvConfig::cluster_pixels, Problem::CLUSTER_PIXELS): a
// cluster's blocks take neighbouring filter tiles of one pixel tile, the
// first loading each stage's im2col box into all of them (TMA multicast)
// and waiting for every block's consumers to release it, each block
// loading its own filters.  Its launch (clusters; the pixels' tiles not
// rounded to clusters, the filters' whole clusters); random convs
// (1D/2D/3D, strides, dilations, padding, K R S C or K C R S filters)
// whose output channels make whole clusters of filter tiles, the last
// part-filled: fwd, some with the fused epilogue or alpha/beta, and
// stride-1 bwddata; grids of one and two clusters taking several tiles
// each (the sanitizer pass leaves out the random convs); and the convs it
// refuses, by name: channels that make no whole clusters, a strided
// bwddata.
class PixelClusterTile : public ::testing::TestWithParam<WgmmaConvConfig> {};

TEST_P(PixelClusterTile, MatchesTheReference) {
  const WgmmaConvConfig& config = GetParam();
  std::mt19937 rng(4335);
  ASSERT_TRUE(config.cluster_pixels && config.ping_pong);
  const long long n = config.filters, cluster = config.cluster;
  const std::int64_t whole = cluster * n;  // output channels of one cluster's tiles
  // 2 x 17 x 17 = 578 pixels (5 tiles) by whole - 8 filters (a cluster).
  test::ConvCase c = channels_last_3x3(72, whole - 8, {17, 17}, {1, 1}, {1, 1});
  auto source = kernel_source(fwd(c, DataType::bf16), config.id);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  const KernelEntry& main = source.value().entries.back();
  EXPECT_EQ(main.cluster_blocks, static_cast<unsigned>(cluster));
  EXPECT_EQ(main.persistent_tiles, 5 * cluster) << "pixel tiles not rounded to clusters";
  EXPECT_EQ(main.threads_per_block, 384u);
  EXPECT_NE(source.value().source.find("CLUSTER_PIXELS = 1"), std::string::npos);
  check(fwd(c, DataType::bf16), rng, 1.0, 0.0, config.id);
  const auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  for (int i = 0; !test::reduced_run() && i < 4; ++i) {
    test::ConvCase r = test::random_channels_last_conv(rng, 1 + i % 3);
    r.filters = (pick(1, 2) * cluster - 1) * n + 8 * pick(1, n / 8);
    SCOPED_TRACE(r.describe());
    OpDescriptor d = fwd(r, i % 2 ? DataType::f16 : DataType::bf16);
    if (i % 2 == 0) {
      d.activation = Activation::silu;
      d.epilogue_operands = kEpilogueBias | kEpilogueResidual;
    }
    check(d, rng, 1.0, i == 1 ? 0.5 : 0.0, config.id);
    std::swap(r.channels, r.filters);
    r.stride.assign(r.input.size(), 1);
    check(bwddata(r, DataType::bf16), rng, 0.5, 0.25, config.id);
  }
  check_on_blocks(fwd(c, DataType::bf16), rng, config.id, cluster, 0.5, 0.25);
  c.filter_layout = test::TestLayout::nchw;
  check_on_blocks(fwd(c, DataType::f16), rng, config.id, 2 * cluster);
  c.filter_layout = test::TestLayout::nhwc;
  std::swap(c.channels, c.filters);  // dx's whole - 8 channels from dy's 72
  check_on_blocks(bwddata(c, DataType::bf16), rng, config.id, cluster, 1.0, 0.5);
  c.stride = {2, 2};
  const Status strided = check_variant(bwddata(c, DataType::bf16), config.id, {"sm_90", false});
  EXPECT_NE(strided.message().find("a strided bwddata's tiles are its stride phases'"),
            std::string::npos)
      << strided.message();
  c.stride = {1, 1};
  c.channels = whole + 8;  // one tile past a whole cluster
  const Status partial = check_variant(bwddata(c, DataType::bf16), config.id, {"sm_90", false});
  EXPECT_NE(partial.message().find(fmt::format("this conv's {} output channels make {} such "
                                               "tiles, not whole clusters",
                                               whole + 8, cluster + 1)),
            std::string::npos)
      << partial.message();
}

INSTANTIATE_TEST_SUITE_P(EmulatedWgmmaConv, PixelClusterTile,
                         ::testing::Values(kWgmmaConfigs[13], kWgmmaConfigs[14]),
                         [](const auto& p) { return std::string(p.param.id); });

// The row-tap tiles (the `r` variants: WgmmaConvConfig::row_taps,
// Problem::ROW_TAPS): a stage takes a window row's S taps from one
// im2col box of 128 + (S - 1) DW anchors a consumer, over output rows
// widened by that reach, tap s its box s DW rows down, and a box of
// filters a tap.  Its launch (the box, the stage, the tiles over the
// widened rows, ROW_TAPS); random channels-last convs, 1D/2D/3D, of 2 to
// 5 taps along W at stride 1 and dilation 1 or 2 there, any strides and
// padding elsewhere, fwd (some with the fused epilogue, alpha/beta) and
// stride-1 bwddata (K R S C filters in place, MN-major, or K C R S
// through the copy); rows of 7 (ResNet-50's layer4: the reach 2/9 of a
// row) across images and rows wider than a tile; split-K's slices (a
// ping-pong block's several tiles instead); 7 taps, whose 128-filter
// stage leaves room for one stage; and the convs it refuses, by rule.
class RowTapTile : public ::testing::TestWithParam<WgmmaConvConfig> {};

TEST_P(RowTapTile, MatchesTheReference) {
  const WgmmaConvConfig& config = GetParam();
  std::mt19937 rng(4350);
  ASSERT_TRUE(config.row_taps);
  // 2 x 19 rows of 17 pixels, widened to 19 anchors: 722 anchors.
  test::ConvCase c = channels_last_3x3(72, 136, {19, 17}, {1, 0}, {1, 2});
  const OpDescriptor d = fwd(c, DataType::bf16);
  auto source = kernel_source(d, config.id);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  const KernelSource& k = source.value();
  const KernelEntry& main = k.entries.back();
  EXPECT_NE(k.source.find("ROW_TAPS = 3"), std::string::npos);
  EXPECT_EQ(k.tensor_maps.at(0).spec.pixels_per_column, 130u);
  const long long n = config.filters,
                  tiles = (722 + config.pixels - 1) / config.pixels * ((136 + n - 1) / n);
  EXPECT_EQ(config.ping_pong ? main.persistent_tiles : main.tiles, tiles);
  // A stage: each consumer's 130 rows of A, in 136, and three taps' filters.
  const auto stage = static_cast<std::size_t>((config.pixels / 128 * 136 + 3 * n) * 128);
  const std::size_t staging =
      config.ping_pong ? 2 * static_cast<std::size_t>(128 * n * 4 + 128 * 8) : 0;
  EXPECT_EQ(main.dynamic_shared_bytes, static_cast<std::size_t>(config.stages) * stage + staging);
  check(d, rng, 1.0, 0.0, config.id);
  // Up to 5 taps, as many as leave room for two stages (256 x 128: 4).
  std::int64_t max_taps = 5;
  while (config.with_row_taps(max_taps, 2 * (max_taps - 1)).stages < 2) --max_taps;
  const int random = test::reduced_run() ? 2 : 6;
  for (int i = 0; i < random; ++i) {
    test::ConvCase r = test::random_row_tap_conv(rng, 1 + i % 3, max_taps);
    SCOPED_TRACE(r.describe());
    OpDescriptor f = fwd(r, i % 2 ? DataType::f16 : DataType::bf16);
    if (i % 3 == 0) {
      f.activation = Activation::silu;
      f.epilogue_operands = kEpilogueBias | kEpilogueResidual;
    }
    check(f, rng, 1.0, i % 3 == 1 ? 0.5 : 0.0, config.id);
    r.stride.assign(r.input.size(), 1);
    r.filters = 8 * (5 + i);  // dx's channels; dy's r.filters, a 64-channel step
    std::swap(r.channels, r.filters);
    check(bwddata(r, DataType::bf16), rng, 0.5, 0.25, config.id);
  }
  // Rows of 7, widened to 9: 4 images of 7 rows, a tile across images.
  c = channels_last_3x3(64, 72, {7, 7}, {1, 1}, {1, 1});
  c.batch = 4;
  check(fwd(c, DataType::bf16), rng, 1.0, 0.0, config.id);
  c.filter_layout = test::TestLayout::nchw;
  check(bwddata(c, DataType::f16), rng, 1.0, 0.5, config.id);
  // A row of 150 pixels: a tile within a row.
  c = channels_last_3x3(40, 24, {3, 150}, {1, 1}, {1, 1});
  check(fwd(c, DataType::bf16), rng, 1.0, 0.0, config.id);
  // 8 x 8 anchors of 8 x 6 pixels by 136 filters, 24 K steps of 3 taps:
  // slices of 6, or a ping-pong block's several tiles.
  c = channels_last_3x3(456, 136, {9, 7}, {1, 0}, {0, 1});
  c.batch = 1;
  if (config.ping_pong) {
    c = channels_last_3x3(72, 136, {24, 20}, {1, 1}, {1, 1});
    check_on_blocks(fwd(c, DataType::bf16), rng, config.id, 3, 0.5, 0.25);
  } else {
    EXPECT_EQ(slicing(fwd(c, DataType::bf16), config.id).split, 4);
    check(fwd(c, DataType::bf16), rng, 0.5, 0.25, config.id);
  }
  // 7 taps of dilation 3 along a 1D row: a stage of 128 filters fits once.
  c.input = {90}, c.kernel = {7}, c.stride = {1}, c.dilation = {3};
  c.pad_begin = {9}, c.pad_end = {9}, c.channels = 64, c.filters = 40, c.batch = 2;
  const Status wide = wgmma_conv_support(fwd(c, DataType::bf16), config);
  if (config.filters == 128)
    EXPECT_NE(wide.message().find("room for 1 stage(s)"), std::string::npos) << wide.message();
  else
    check(fwd(c, DataType::bf16), rng, 1.0, 0.0, config.id);
}

// What a row-tap tile does not serve, each refused by its rule and the
// variant to use instead.
TEST_P(RowTapTile, RefusesWhatItsBoxCannotHold) {
  const WgmmaConvConfig& config = GetParam();
  const std::string plain(config.id.substr(0, config.id.size() - 1));
  const auto refused = [&](const OpDescriptor& d, std::string_view why) {
    SCOPED_TRACE(descriptor_name(d));
    const Status s = wgmma_conv_support(d, config);
    EXPECT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find(why), std::string::npos) << s.message();
  };
  test::ConvCase c = channels_last_3x3(72, 136, {19, 17}, {1, 1}, {1, 1});
  c.stride = {1, 2};
  refused(fwd(c, DataType::bf16),
          "at stride 1 along W; this conv has 3 tap(s) along W at "
          "stride 2: use " +
              plain);
  refused(bwddata(c, DataType::bf16), "strided bwddata runs by stride phases: use " + plain);
  c.stride = {1, 1};
  refused(bwdfilt(c, DataType::bf16), "use wgmma128x128");
  c.kernel = {3, 1}, c.pad_begin = {1, 0}, c.pad_end = {1, 0};
  refused(fwd(c, DataType::bf16), "this conv has 1 tap(s) along W at stride 1");
  c = channels_last_3x3(32, 136, {19, 17}, {1, 1}, {1, 1});
  refused(fwd(c, DataType::bf16), "in K steps of 64 channels; this conv reduces 32 a step");
  refused(fwd(test::small_resnet50_stem(), DataType::bf16), "this conv folds its taps");
}

INSTANTIATE_TEST_SUITE_P(EmulatedWgmmaConv, RowTapTile,
                         ::testing::Values(kWgmmaConfigs[9], kWgmmaConfigs[10], kWgmmaConfigs[11],
                                           kWgmmaConfigs[12]),
                         [](const auto& p) { return std::string(p.param.id); });

// A strided conv's bwddata, by stride phases (conv_bwddata_wgmma.cuh):
// random channels-last convs whose strides are not all 1, their filters
// (dy's channels) a multiple of 8.
TEST(EmulatedWgmmaConv, RandomStridedBackwardData) {
  std::mt19937 rng(4308);
  int strided = 0;
  for (DataType dtype : {DataType::bf16, DataType::f16})
    for (int i = 0; i < 8; ++i) {
      test::ConvCase c = test::random_channels_last_conv(rng, 1 + i % 3);
      c.filters = 8 * std::uniform_int_distribution<std::int64_t>(1, 20)(rng);
      if (std::all_of(c.stride.begin(), c.stride.end(), [](std::int64_t s) { return s == 1; }))
        c.stride[0] = 2;
      SCOPED_TRACE(c.describe());
      const OpDescriptor d = bwddata(c, dtype);
      if (!wgmma_conv_support(d).is_ok()) continue;  // a window TMA's offsets cannot reach
      check(d, rng);
      ++strided;
    }
  EXPECT_GE(strided, 12);
}

// The phases the random ones may miss: a 1x1 stride-2 conv (ResNet's
// downsampling shortcut), whose odd phases have no taps (dx = beta dx
// there); a 3x3 of stride 2 and dilation 2 (only the phases of pad's
// parity have taps); a stride above the filter's size and uneven per
// axis in 3D; dx sizes that are not multiples of the stride (a narrower
// last phase); alpha/beta, and tiles across pixels and channels.
TEST(EmulatedWgmmaConv, StridedBackwardDataPhases) {
  std::mt19937 rng(4309);
  test::ConvCase c = channels_last_3x3(64, 136, {14, 13}, {0, 0}, {0, 0});
  c.kernel = {1, 1}, c.stride = {2, 2};
  check(bwddata(c, DataType::bf16), rng, 0.5, 0.25);
  c = channels_last_3x3(136, 32, {11, 12}, {2, 1}, {1, 2});
  c.stride = {2, 2}, c.dilation = {2, 2};
  check(bwddata(c, DataType::f16), rng);
  c.filter_layout = test::TestLayout::nchw;
  c.channels = 24, c.filters = 16;
  c.input = {7, 9, 8}, c.kernel = {2, 3, 1}, c.stride = {3, 1, 2}, c.dilation = {1, 2, 1};
  c.pad_begin = {1, 2, 0}, c.pad_end = {0, 1, 1};
  check(bwddata(c, DataType::bf16), rng, 1.0, 0.5);
  c = channels_last_3x3(200, 64, {33, 30}, {1, 1}, {1, 1});
  c.stride = {2, 2};
  check(bwddata(c, DataType::bf16), rng);
}

// A phase no tap lands on is dx = beta dx.  Where w is read in place
// (1x1 convs, K R S C filters), the first pass writes it, not a copy of
// w, and the tiles cover the phases with taps alone: a 1x1 stride-2
// conv's one of four (ResNet's downsampling shortcut; dx 30 x 29, 15 x 15
// pixels a phase, 4 tiles of 128 by the 72 channels' one, where all four
// phases made 16); a stride-3 1D conv's one of three; a 3D window of
// 1 x 3 x 1 strided 2 along D and W but not H.  beta 0 (dx poisoned
// first), and beta with alpha; the first pass's grid cut short, so that
// its threads loop.  Where the first pass copies K C R S
// filters, those phases' tiles write it, as of no K steps.
TEST(EmulatedWgmmaConv, APhaseWithoutTapsIsWrittenByTheFirstPass) {
  std::mt19937 rng(4311);
  test::ConvCase c = channels_last_3x3(72, 64, {30, 29}, {0, 0}, {0, 0});
  c.kernel = {1, 1}, c.stride = {2, 2};
  const OpDescriptor downsample = bwddata(c, DataType::bf16);
  EXPECT_EQ(stride_phases(downsample).count, 4);
  EXPECT_EQ(stride_phases(downsample).with_taps, 1);
  test::ConvCase three = channels_last_3x3(72, 64, {30, 29}, {1, 1}, {1, 1});
  three.stride = {2, 2};
  EXPECT_EQ(stride_phases(bwddata(three, DataType::bf16)).with_taps, 4);  // taps on each phase
  EXPECT_FALSE(wgmma_conv_launch(bwddata(three, DataType::bf16), kWgmmaConfigs[0]).fills_phases);
  three.dilation = {2, 2};  // every tap on the odd phases
  EXPECT_EQ(stride_phases(bwddata(three, DataType::bf16)).with_taps, 1);
  const WgmmaConvLaunch launch = wgmma_conv_launch(downsample, kWgmmaConfigs[0]);
  EXPECT_TRUE(launch.fills_phases);
  ASSERT_EQ(launch.entries.size(), 2u);
  EXPECT_EQ(launch.entries[0].name, "convjit_kernel_prepare");
  EXPECT_FALSE(launch.entries[0].copies_filters);         // no promise skips it
  EXPECT_EQ(launch.entries[0].threads, 2 * 30 * 29 * 9);  // a chunk of 8 channels a thread
  c.batch = 64;  // 64 x 30 x 29 x 9 chunks, past a wave of 132 SMs' 2048 threads: they loop
  EXPECT_EQ(wgmma_conv_launch(bwddata(c, DataType::bf16), kWgmmaConfigs[0]).entries[0].threads,
            132 * 2048);
  c.batch = 2;
  EXPECT_EQ(launch.entries[1].blocks(), 4u);
  check(downsample, rng);
  check(downsample, rng, 0.5, 0.25);
  // The first pass's grid cut to 300 threads for 15660 chunks: each loops.
  for (const double beta : {0.0, 0.25})
    run_adjusted(downsample, rng, kWgmmaVariant, 1.0, beta, [](KernelSource& source) {
      ASSERT_EQ(source.entries.front().name, "convjit_kernel_prepare");
      source.entries.front().threads = 300;
    });
  c.input = {17}, c.kernel = {1}, c.stride = {3}, c.dilation = {1};
  c.pad_begin = {0}, c.pad_end = {0};
  check(bwddata(c, DataType::f16), rng);
  c.input = {5, 6, 7}, c.kernel = {1, 3, 1}, c.stride = {2, 1, 2}, c.dilation = {1, 1, 1};
  c.pad_begin = {0, 1, 0}, c.pad_end = {0, 1, 0};
  EXPECT_TRUE(wgmma_conv_launch(bwddata(c, DataType::bf16), kWgmmaConfigs[0]).fills_phases);
  check(bwddata(c, DataType::bf16), rng);
  check(bwddata(c, DataType::bf16), rng, 1.0, 0.5);
  c.filter_layout = test::TestLayout::nchw;  // K C R S: the first pass copies w
  const OpDescriptor copied = bwddata(c, DataType::bf16);
  const WgmmaConvLaunch copying = wgmma_conv_launch(copied, kWgmmaConfigs[0]);
  EXPECT_FALSE(copying.fills_phases);
  EXPECT_TRUE(copying.entries.front().copies_filters);
  check(copied, rng);
}

// More pixels than one tile and more filters than one: several blocks on
// both axes, the last of each partial; a 1x1 stride-2 conv (ResNet's
// downsampling shortcut) and a 7x7 stride-2 one with C = 8.
TEST(EmulatedWgmmaConv, TilesAcrossPixelsAndFiltersAndTheModelsOddLayers) {
  std::mt19937 rng(4302);
  test::ConvCase c = channels_last_3x3(72, 136, {13, 11}, {1, 0}, {1, 2});
  check(fwd(c, DataType::bf16), rng);
  c.channels = 64, c.filters = 128, c.input = {14, 14}, c.kernel = {1, 1}, c.stride = {2, 2};
  c.pad_begin = {0, 0}, c.pad_end = {0, 0};
  check(fwd(c, DataType::f16), rng);
  c.channels = 8, c.filters = 64, c.input = {20, 18}, c.kernel = {7, 7}, c.stride = {2, 2};
  c.pad_begin = {3, 3}, c.pad_end = {3, 3};
  check(fwd(c, DataType::bf16), rng);
  c.filter_layout = test::TestLayout::nchw;  // K C R S: through the packed copy
  c.channels = 24, c.filters = 40, c.kernel = {3, 3}, c.stride = {1, 2}, c.dilation = {2, 1};
  c.pad_begin = {2, 0}, c.pad_end = {1, 1};
  check(fwd(c, DataType::f16), rng, 0.5, 0.5);
}

// A last pixel tile of 64 rows or fewer skips its bottom rows' wgmmas
// (and a 256-row tile's second consumer, of 64 rows or fewer, its own):
// 129, 192 and 193 pixels leave 1, 64 and 65 rows in the last tile of
// 128; fwd in each shape of tile, stride-1 bwddata (the forward conv it
// equals) and a strided one (by phases, whose last tile's rows end at
// the phases' grid).
TEST(EmulatedWgmmaConv, ALastPixelTileOf64RowsOrFewerSkipsItsBottomRows) {
  std::mt19937 rng(4303);
  for (const std::vector<std::int64_t>& input :
       {std::vector<std::int64_t>{3, 43}, {12, 16}, {1, 193}}) {
    test::ConvCase c = channels_last_3x3(64, 256, input, {1, 1}, {1, 1});
    c.batch = 1;
    for (const std::string_view variant :
         {"wgmma128x128", "wgmma256x128", "wgmma128x64p", "wgmma128x64pa", "wgmma128x64pr"})
      check(fwd(c, DataType::bf16), rng, 1.0, 0.0, variant);
    check(bwddata(c, DataType::bf16), rng, 1.0, 0.0, "wgmma128x64p");
  }
  test::ConvCase strided = channels_last_3x3(64, 64, {16, 16}, {1, 1}, {1, 1});
  strided.batch = 1, strided.stride = {2, 2};  // 4 phases of 8 x 8: a tile of 64 rows each
  check(bwddata(strided, DataType::bf16), rng, 1.0, 0.0, "wgmma128x128");
}

// K C R S filters reach the Hopper conv through the copy into the
// workspace, tile by tile (conv/packed_filters.cuh: 2 filters by 64
// channels for a fwd; 8 rows by 16 filters of a bwddata's transposed
// ones), on tiles' edges: 1, 3, 9, 25 and 27 taps; filter and channel
// counts off the tiles; a last tile of channels whose runs in w are not
// whole 16-byte chunks (12 channels of 9 taps: 4 in the last tile);
// fwd, stride-1 bwddata (taps flipped) and strided (by phases); wide
// tiles (4 by 64, 8 by 32) for 520 x 344 filters, their last partial.
// And 49 taps, past the tile's 48, through the gathering copy.
TEST(EmulatedWgmmaConv, CopiesKcrsFiltersByTilesToTheirEdges) {
  std::mt19937 rng(4321);
  struct Shape {
    std::int64_t channels, filters;
    std::vector<std::int64_t> input, kernel, stride;
  };
  const Shape shapes[] = {
      {24, 136, {9, 7}, {3, 3}, {1, 1}}, {72, 40, {5, 4, 6}, {3, 3, 3}, {1, 1, 1}},
      {16, 24, {11, 9}, {5, 5}, {2, 1}}, {40, 16, {13}, {3}, {2}},
      {12, 80, {7, 8}, {3, 3}, {1, 1}},  {16, 24, {9, 8}, {7, 7}, {1, 1}},
      {520, 344, {3, 3}, {3, 3}, {1, 1}}};
  for (const Shape& shape : shapes) {
    test::ConvCase c;
    c.batch = 2, c.channels = shape.channels, c.filters = shape.filters, c.input = shape.input;
    c.kernel = shape.kernel, c.stride = shape.stride;
    c.dilation = std::vector<std::int64_t>(shape.kernel.size(), 1);
    for (std::int64_t k : shape.kernel) c.pad_begin.push_back(k / 2), c.pad_end.push_back(k / 2);
    c.layout = test::TestLayout::nhwc, c.filter_layout = test::TestLayout::nchw;
    SCOPED_TRACE(c.describe());
    if (c.channels % 8 == 0) check(fwd(c, DataType::bf16), rng);
    check(bwddata(c, DataType::f16), rng);
  }
}

// The epilogue stages its tile without bank conflicts in every
// configuration, fwd and bwddata, and in the 64-filter tiles' N of 32:
//   - by TMA (a forward conv's whole tiles, y's pixels rows of one
//     stride): 16-bit pairs in 4-byte stores, a quarter-warp's 8 rows in
//     8 chunks of TMA's swizzle (store_by_tma), and the boxes stored by
//     TMA; nothing read back;
//   - else (with a fused residual, read at y's offsets): f32 in 8-byte
//     stores, a half-warp a phase, read back in 16-byte loads, a
//     quarter-warp a phase (staged_index's swizzle in wgmma_conv_tile.cuh).
//     The row offsets kept after the tile are 8-byte stores too, a row a
//     thread.
TEST(EmulatedWgmmaConv, TheEpilogueStagesAndReadsItsTileWithoutBankConflicts) {
  // 18 K steps: one slice, so the tile goes through shared memory.
  const test::ConvCase c = channels_last_3x3(128, 128, {14, 14}, {1, 1}, {1, 1});
  // A tile of other shared arrays first, on the first block only: the
  // cluster's blocks must still count each array as one site
  // (BlockScheduler::shared_region_id), whatever each declared before.
  ASSERT_TRUE(count_variant_memory(fwd(c, DataType::bf16), "tc128x64", 1).is_ok());
  test::ConvCase narrow = c;  // 64-filter tiles of N = 32
  narrow.filters = 24;
  OpDescriptor residual = fwd(c, DataType::bf16);
  residual.epilogue_operands = kEpilogueResidual;
  int by_tma = 0, by_threads = 0;
  for (const WgmmaConvConfig& config : kWgmmaConfigs)
    for (const OpDescriptor& d : {fwd(c, DataType::bf16), bwddata(c, DataType::bf16),
                                  fwd(narrow, DataType::bf16), residual}) {
      if (!whole_pixel_clusters(d, config)) continue;  // the ping-pong tiles' epilogue
      SCOPED_TRACE(fmt::format("{} {}", config.id, descriptor_name(d)));
      ASSERT_TRUE(wgmma_conv_support(d, config).is_ok()) << wgmma_conv_support(d, config).message();
      const bool tma = wgmma_conv_launch(d, config).tma_store;
      (tma ? by_tma : by_threads) += 1;
      auto counted = count_variant_memory(d, config.id, 1);
      ASSERT_TRUE(counted.is_ok()) << counted.status().message();
      int reads = 0, stores = 0, words = 0, boxes = 0;
      for (const emulator::KernelMemoryCounters& kernel : counted.value())
        for (const emulator::SiteCounters& s : kernel.sites) {
          boxes += s.site.op == emulator::MemoryOp::bulk_store;
          if (s.site.space != emulator::MemorySpace::shared) continue;
          const bool read = s.site.op == emulator::MemoryOp::load && s.site.bytes == 16;
          const bool staged = s.site.op == emulator::MemoryOp::store && s.site.bytes == 8;
          const bool word = s.site.op == emulator::MemoryOp::store && s.site.bytes == 4;
          if (!read && !staged && !word) continue;
          reads += read;
          stores += staged;
          words += word;
          EXPECT_GT(s.instructions, 0);
          EXPECT_EQ(s.cost, s.ideal) << s.object;
        }
      // One site each, as the emulator tells sites apart by what they
      // touch and how (the accumulators' and the row offsets' stores
      // too).
      EXPECT_EQ(reads, tma ? 0 : 1);
      EXPECT_EQ(stores, tma ? 0 : 1);
      EXPECT_EQ(words, tma ? 1 : 0);
      EXPECT_EQ(boxes > 0, tma);
    }
  EXPECT_GT(by_tma, 0);
  EXPECT_GT(by_threads, 0);
}

// The TMA store (store_by_tma): a forward conv's whole tiles where y's
// pixels are rows of one stride, at beta 0.  Rows of 40 filters in a
// stride of 48 (a view of a wider tensor's channels) go by TMA in every
// configuration, the row taps' by pieces of 8 pixels of an output row
// (StoreRows; their tiles' first and last anchors cut pieces in 9-pixel
// rows, which their threads store): the boxes past the 40 filters, a
// piece's pixels past the row and the last tile's rows past the pixels
// are clipped, and the poisoned pad between rows stays NaN (the
// comparison's gaps); so in the 64-filter tile's N of 32 for 24 filters,
// its 64-byte swizzle, and with a fused bias and SiLU.  The same kernels
// at beta 0.5 blend through the threads' store.  A stride-1 bwddata
// stores dx so; a fused residual (read at y's offsets), y whose rows are
// not one stride (a pad after each image row), a strided bwddata (by
// phases), split-K's partial sums, and rows of one pixel in row taps
// (128 anchors over 43 rows, a piece's slots each: more than the staging
// holds) do not, and still match.
TEST(EmulatedWgmmaConv, StoresWholeTilesByTmaWhereYsPixelsAreRowsOfOneStride) {
  std::mt19937 rng(4395);
  test::ConvCase c = channels_last_3x3(64, 40, {7, 9}, {1, 1}, {1, 1});
  const auto padded_rows = [](OpDescriptor d, std::int64_t row, std::int64_t image_row) {
    d.y_strides = {d.y_dims[2] * image_row, 1, image_row, row, 0};
    return d;
  };
  const OpDescriptor rows = padded_rows(fwd(c, DataType::bf16), 48, 48 * 9);
  for (const WgmmaConvConfig& config : kWgmmaConfigs) {
    if (!whole_pixel_clusters(rows, config)) continue;  // the ping-pong tiles' store
    EXPECT_TRUE(wgmma_conv_launch(rows, config).tma_store) << config.id;
    check(rows, rng, 1.0, 0.0, config.id);
  }
  test::ConvCase single = channels_last_3x3(64, 40, {40, 1}, {1, 1}, {1, 1});
  single.batch = 4;
  EXPECT_GT(row_store_slots(1, 3), CONVJIT_WGMMA_ROW_STORE_SLOTS);
  // ResNet-50's and YOLO11n's rows (3 x 3 at stride 1: a reach of 2) fit.
  for (const long long width : {7, 14, 20, 28, 40, 56, 80, 160, 320})
    EXPECT_LE(row_store_slots(width, width + 2), CONVJIT_WGMMA_ROW_STORE_SLOTS) << width;
  EXPECT_FALSE(wgmma_conv_launch(fwd(single, DataType::bf16), kWgmmaConfigs[12]).tma_store);
  check(fwd(single, DataType::bf16), rng, 1.0, 0.0, kWgmmaConfigs[12].id);
  check(rows, rng, 1.0, 0.5, kWgmmaConfigs[5].id);
  test::ConvCase narrow = c;
  narrow.filters = 24;
  const OpDescriptor narrow_rows = padded_rows(fwd(narrow, DataType::f16), 32, 32 * 9);
  EXPECT_TRUE(wgmma_conv_launch(narrow_rows, kWgmmaConfigs[6]).tma_store);
  EXPECT_EQ(wgmma_conv_launch(narrow_rows, kWgmmaConfigs[6]).filters, 32);
  check(narrow_rows, rng, 0.75, 0.0, kWgmmaConfigs[6].id);
  check(narrow_rows, rng, 0.75, 0.5, kWgmmaConfigs[6].id);
  OpDescriptor fused = rows;
  fused.activation = Activation::silu;
  fused.epilogue_operands = kEpilogueBias;
  EXPECT_TRUE(wgmma_conv_launch(fused, kWgmmaConfigs[5]).tma_store);
  check(fused, rng, 0.5, 0.0, kWgmmaConfigs[5].id, 2);
  check(fused, rng, 1.0, 0.0, kWgmmaConfigs[3].id);
  fused.epilogue_operands = kEpilogueBias | kEpilogueResidual;
  EXPECT_FALSE(wgmma_conv_launch(fused, kWgmmaConfigs[5]).tma_store);
  check(fused, rng, 1.0, 0.0, kWgmmaConfigs[5].id);
  c.stride.assign(2, 1);
  const OpDescriptor dx = bwddata(c, DataType::bf16);
  EXPECT_TRUE(wgmma_conv_launch(dx, kWgmmaConfigs[0]).tma_store);
  check(dx, rng, 0.5, 0.0, kWgmmaVariant);
  // Not by TMA: a pad after each image row.
  const OpDescriptor gapped = padded_rows(fwd(c, DataType::bf16), 40, 40 * 9 + 8);
  EXPECT_FALSE(wgmma_conv_launch(gapped, kWgmmaConfigs[0]).tma_store);
  check(gapped, rng, 1.0, 0.0, kWgmmaVariant);
  test::ConvCase strided = c;
  strided.stride = {2, 2};
  EXPECT_FALSE(wgmma_conv_launch(bwddata(strided, DataType::bf16), kWgmmaConfigs[0]).tma_store);
  // Few tiles, a long reduction: split-K.
  const test::ConvCase sliced = channels_last_3x3(512, 64, {4, 4}, {1, 1}, {1, 1});
  const WgmmaConvLaunch split = wgmma_conv_launch(fwd(sliced, DataType::bf16), kWgmmaConfigs[0]);
  EXPECT_GT(split.split, 1);
  EXPECT_FALSE(split.tma_store);
}

// CONVJIT_WGMMA_TMA_STORE=0 (a developer's switch, so that a GPU times
// the two stores side by side) keeps every tile on the threads' store: a
// kernel of its own (TMA_STORE = 0 in its source, so in its cache key),
// without y's map, and as exact.
TEST(EmulatedWgmmaConv, TheTmaStoreCanBeTurnedOffForSideBySideTimes) {
  std::mt19937 rng(4396);
  const OpDescriptor d = fwd(channels_last_3x3(64, 40, {7, 9}, {1, 1}, {1, 1}), DataType::bf16);
  const auto source = [&] {
    auto k = kernel_source(d, kWgmmaConfigs[5].id);
    EXPECT_TRUE(k.is_ok()) << k.status().message();
    return k.is_ok() ? k.value() : KernelSource{};
  };
  const KernelSource on = source();
  EXPECT_EQ(on.tensor_maps.size(), 3u);
  std::optional<test::ThreadsStoreScope> threads(std::in_place);
  const KernelSource off = source();
  const bool stored_by_tma = wgmma_conv_launch(d, kWgmmaConfigs[5]).tma_store;
  check(d, rng, 1.0, 0.0, kWgmmaConfigs[5].id);
  threads.reset();
  EXPECT_FALSE(stored_by_tma);
  EXPECT_EQ(off.tensor_maps.size(), 2u);
  EXPECT_NE(off.source.find("TMA_STORE = 0"), std::string::npos);
  EXPECT_NE(on.source.find("TMA_STORE = 1"), std::string::npos);
  EXPECT_TRUE(wgmma_conv_launch(d, kWgmmaConfigs[5]).tma_store);
}

// It serves the models' dense fwd convs in bf16 channels-last (their
// K C R S filters through a packed copy), all of them: the stems (3
// channels: 6-byte pixel strides) with their taps folded.
TEST(EmulatedWgmmaConv, ServesTheModelsDenseChannelsLastFwdConvs) {
  for (const char* model : {"resnet50", "yolo11n"}) {
    int dense = 0, served = 0;
    for (const OpDescriptor& d : test::model_descriptors(model, {2, 64, true, DataType::bf16})) {
      if (!d.is_conv() || d.direction != Direction::fwd || d.groups != 1) continue;
      ++dense;
      const Status s = wgmma_conv_support(d);
      if (s.is_ok())
        ++served;
      else
        ADD_FAILURE() << descriptor_name(d) << ": " << s.message();
      EXPECT_EQ(folds_taps(d), d.x_dims[1] % 8 != 0) << descriptor_name(d);
    }
    EXPECT_EQ(served, dense) << model << ": the stem's 3 channels too, folded";
    EXPECT_GT(served, 10) << model;
  }
}

// And their dense bwddata convs, all of them (dy has at least 16 channels
// in both models), strided ones by phases.
TEST(EmulatedWgmmaConv, ServesTheModelsChannelsLastBwddataConvs) {
  for (const char* model : {"resnet50", "yolo11n"}) {
    int strided = 0, served = 0;
    for (const OpDescriptor& d : test::model_descriptors(model, {2, 64, true, DataType::bf16})) {
      if (!d.is_conv() || d.direction != Direction::bwddata || d.groups != 1) continue;
      strided += std::any_of(d.stride.begin(), d.stride.begin() + d.spatial_dims,
                             [](std::int64_t s) { return s != 1; });
      const Status s = wgmma_conv_support(d);
      EXPECT_TRUE(s.is_ok()) << descriptor_name(d) << ": " << s.message();
      served += s.is_ok();
    }
    EXPECT_GT(served, 10) << model;
    EXPECT_GT(strided, 0) << model;
  }
}

// Their bwddata convs with K R S C filters read them in place, MN-major,
// with no copy (stride 1 as the forward conv, strided by phases: the
// downsampling shortcuts' first pass writes their phases without taps),
// and match the reference in the Hopper configuration auto leads with
// (the model sweeps give their K C R S filters, which go through the
// packed copy).
TEST(EmulatedWgmmaConv, ReadsTheModelsKrscFiltersInPlaceInBwddata) {
  std::mt19937 rng(4310);
  for (const char* model : {"resnet50", "yolo11n"}) {
    std::set<std::string> seen;
    int ran = 0, strided = 0;
    ModelOptions krsc{1, 64, true, DataType::bf16};
    krsc.krsc_filters = true;
    std::vector<OpDescriptor> convs;
    for (const OpDescriptor& d : test::model_descriptors(model, krsc))
      if (d.is_conv() && d.direction == Direction::bwddata && d.groups == 1 &&
          seen.insert(descriptor_name(d)).second)
        convs.push_back(d);
    for (const OpDescriptor& d : test::sweep(convs)) {
      const std::string lead = jit_variants(d, {"sm_90", false}).front();
      if (find_wgmma_config(lead) == nullptr) continue;  // the tiles lead on 16 channels
      auto source = kernel_source(d, lead);
      ASSERT_TRUE(source.is_ok()) << source.status().message();
      // No copy; a first pass only where it writes the phases without taps.
      EXPECT_EQ(source.value().entries.front().name,
                wgmma_conv_launch(d, *find_wgmma_config(lead)).fills_phases
                    ? "convjit_kernel_prepare"
                    : "convjit_kernel")
          << descriptor_name(d);
      EXPECT_FALSE(source.value().entries.front().copies_filters) << descriptor_name(d);
      check(d, rng, 1.0, 0.0, lead);
      ++ran;
      strided += std::any_of(d.stride.begin(), d.stride.begin() + d.spatial_dims,
                             [](std::int64_t s) { return s != 1; });
    }
    EXPECT_GT(strided, 0) << model;
    EXPECT_GT(ran, 3) << model;
  }
}

// And their dense bwdfilt convs but the stems (x's 3 channels).
TEST(EmulatedWgmmaConv, ServesTheModelsDenseChannelsLastBwdfiltConvs) {
  for (const char* model : {"resnet50", "yolo11n"}) {
    int dense = 0, served = 0;
    for (const OpDescriptor& d : test::model_descriptors(model, {2, 64, true, DataType::bf16})) {
      if (!d.is_conv() || d.direction != Direction::bwdfilt || d.groups != 1) continue;
      ++dense;
      const Status s = wgmma_conv_support(d);
      if (s.is_ok()) ++served;
      else if (d.x_dims[1] % 8 != 0)
        EXPECT_NE(s.message().find("cannot map x"), std::string::npos) << s.message();
      else
        ADD_FAILURE() << descriptor_name(d) << ": " << s.message();
    }
    EXPECT_GE(served, dense - 1) << model;
    EXPECT_GT(served, 10) << model;
  }
}

// Where it does not apply it says why, and the JIT's other variants serve.
TEST(EmulatedWgmmaConv, RefusesWhatTmaAndTheTileCannotServeNamingTheRule) {
  test::ConvCase c;
  c.batch = 1, c.channels = 16, c.filters = 16, c.input = {6, 6}, c.kernel = {3, 3};
  c.layout = test::TestLayout::nhwc, c.filter_layout = test::TestLayout::nhwc;
  const auto refusal = [](const OpDescriptor& d) {
    const Status s = check_variant(d, kWgmmaVariant, {"sm_90", false});
    EXPECT_FALSE(s.is_ok()) << descriptor_name(d);
    EXPECT_EQ(s.code(), CONVJIT_STATUS_NOT_AVAILABLE);
    return s.message();
  };
  EXPECT_TRUE(check_variant(fwd(c, DataType::bf16), kWgmmaVariant, {"sm_90", false}).is_ok());
  EXPECT_NE(refusal(fwd(c, DataType::f32)).find("f16 and bf16"), std::string::npos);
  EXPECT_TRUE(check_variant(bwddata(c, DataType::bf16), kWgmmaVariant, {"sm_90", false}).is_ok());
  EXPECT_TRUE(check_variant(bwdfilt(c, DataType::bf16), kWgmmaVariant, {"sm_90", false}).is_ok());
  OpDescriptor planar_dy = bwdfilt(c, DataType::bf16);  // x channels-last, dy not
  planar_dy.y_strides = {16 * 16, 16, 4, 1, 0};
  EXPECT_NE(refusal(planar_dy).find("reads dy with TMA along its filters"), std::string::npos);
  test::ConvCase strided = c;  // by stride phases
  strided.stride = {2, 1};
  auto phased = kernel_source(bwddata(strided, DataType::bf16), kWgmmaVariant);
  ASSERT_TRUE(phased.is_ok()) << phased.status().message();
  EXPECT_EQ(phased.value().template_name, "conv/conv_bwddata_wgmma.cuh");
  test::ConvCase far = c;  // 2D: im2col offsets below 2^8; the phases span 300 pixels of dy
  far.input = {4, 900}, far.kernel = {1, 900}, far.stride = {1, 3};
  EXPECT_NE(refusal(bwddata(far, DataType::bf16)).find("stride phases span"), std::string::npos);
  test::ConvCase narrow_dy = c;  // dy's 12 channels: 24-byte pixel strides
  narrow_dy.filters = 12;
  EXPECT_NE(refusal(bwddata(narrow_dy, DataType::bf16)).find("dy"), std::string::npos);
  EXPECT_NE(refusal(bwdfilt(narrow_dy, DataType::bf16)).find("cannot map dy"), std::string::npos);
  const Status later = check_variant(fwd(c, DataType::bf16), kWgmmaVariant, {"sm_100", false});
  EXPECT_NE(later.message().find("sm_90a"), std::string::npos) << later.message();
  test::ConvCase grouped = c;
  grouped.groups = 2;
  EXPECT_NE(refusal(fwd(grouped, DataType::bf16)).find("one group"), std::string::npos);
  test::ConvCase planar = c;
  planar.layout = test::TestLayout::nchw;
  EXPECT_NE(refusal(fwd(planar, DataType::bf16)).find("reads x with TMA along its channels"),
            std::string::npos);
  EXPECT_NE(refusal(bwddata(planar, DataType::bf16)).find("reads dy with TMA along its channels"),
            std::string::npos);
  test::ConvCase kcrs = c;  // served through a packed copy
  kcrs.filter_layout = test::TestLayout::nchw;
  EXPECT_TRUE(check_variant(fwd(kcrs, DataType::bf16), kWgmmaVariant, {"sm_90", false}).is_ok());
  test::ConvCase rgb = c;  // 3 channels: 6-byte pixel strides, served by folding the taps
  rgb.channels = 3;
  EXPECT_TRUE(check_variant(fwd(rgb, DataType::bf16), kWgmmaVariant, {"sm_90", false}).is_ok());
  test::ConvCase wide = c;
  wide.stride = {9, 1};
  wide.input = {20, 6};
  EXPECT_NE(refusal(fwd(wide, DataType::bf16)).find("traversal stride"), std::string::npos);
  OpDescriptor huge = fwd(c, DataType::bf16);  // 2^36 images of 16 output pixels: 2^33 tiles
  huge.x_dims[0] = huge.y_dims[0] = std::int64_t{1} << 36;
  EXPECT_NE(refusal(huge).find("beyond the grid's"), std::string::npos);
}

// The auto choice on sm_90 from 16 channels reduced (x's, or dy's) in
// fwd and bwddata, and in bwdfilt where the filters and channels are 16
// or more, as the H200 measured; offered last below that, on other
// architectures' lists never, in the emulator last.  Compiled for the
// architecture-specific target with its tensor maps (x, w and y's for
// the TMA store) and its ring in dynamic shared memory.
TEST(EmulatedWgmmaConv, LeadsOnSm90From16ChannelsAndIsBuiltForSm90a) {
  test::ConvCase c;  // 264 tiles of 128 x 128: two a ping-pong block
  c.batch = 132, c.channels = 64, c.filters = 128, c.input = {16, 16}, c.kernel = {3, 3};
  c.pad_begin = {1, 1};
  c.layout = test::TestLayout::nhwc, c.filter_layout = test::TestLayout::nhwc;
  const OpDescriptor d = fwd(c, DataType::bf16);
  constexpr std::string_view kTwoBlocks = kWgmmaConfigs[1].id, kHalf = kWgmmaConfigs[2].id,
                             kWide = kWgmmaConfigs[3].id, kWideHalf = kWgmmaConfigs[4].id,
                             kPingPong = kWgmmaConfigs[5].id, kHalfPingPong = kWgmmaConfigs[6].id,
                             kClusters = kWgmmaConfigs[7].id, kWideFilters = kWgmmaConfigs[8].id;
  const std::vector<std::string> row_taps = {
      std::string(kWgmmaConfigs[9].id), std::string(kWgmmaConfigs[10].id),
      std::string(kWgmmaConfigs[11].id), std::string(kWgmmaConfigs[12].id)};
  const std::vector<std::string> ids = jit_variants(d, {"sm_90", false});
  EXPECT_EQ(ids.front(), kPingPong);
  const std::vector<std::string> emulated = jit_variants(d, {"", false});
  EXPECT_EQ(offered_last(emulated), kPingPong);
  EXPECT_TRUE(hopper_variants_trail(emulated));
  for (const std::string& id : jit_variants(d, {"sm_80", false}))
    EXPECT_EQ(find_wgmma_config(id), nullptr) << id;
  test::ConvCase narrow = c;
  narrow.channels = 32;
  EXPECT_EQ(jit_variants(fwd(narrow, DataType::bf16), {"sm_90", false}).front(), kPingPong);
  // The narrowest K step (16 channels) at stride 1: 256 x 64 (the H200's
  // times); strided, the ping-pong tile still.
  narrow.channels = 16;
  EXPECT_EQ(jit_variants(fwd(narrow, DataType::bf16), {"sm_90", false}).front(), kWideHalf);
  test::ConvCase strided_narrow = narrow;
  strided_narrow.stride = {2, 2};
  EXPECT_NE(jit_variants(fwd(strided_narrow, DataType::bf16), {"sm_90", false}).front(), kWideHalf);
  narrow.channels = 8;
  const std::vector<std::string> narrow_ids = jit_variants(fwd(narrow, DataType::bf16), {"sm_90", false});
  EXPECT_EQ(offered_last(narrow_ids), kWideHalf);
  EXPECT_TRUE(hopper_variants_trail(narrow_ids));
  auto source = kernel_source(d, kWgmmaVariant);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  EXPECT_TRUE(source.value().arch_specific);
  // Map 2: y as 128 filters by 132 x 16 x 16 pixels, rows of 128 filters,
  // stored in boxes of 64 filters by 128 pixels, 128-byte swizzled.
  ASSERT_EQ(source.value().tensor_maps.size(), 3u);
  const TensorMapArgument& store = source.value().tensor_maps[2];
  EXPECT_EQ(store.operand, TensorMapArgument::Operand::out);
  EXPECT_EQ(store.spec.rank, 2u);
  EXPECT_EQ(store.spec.dims[0], 128u);
  EXPECT_EQ(store.spec.dims[1], 132u * 16 * 16);
  EXPECT_EQ(store.spec.strides[0], 128u * 2);
  EXPECT_EQ(store.spec.box[0], 64u);
  EXPECT_EQ(store.spec.box[1], 128u);
  EXPECT_EQ(store.spec.swizzle, TensorMapSwizzle::b128);
  EXPECT_NE(source.value().source.find("TMA_STORE = 1"), std::string::npos);
  ASSERT_EQ(source.value().entries.size(), 1u);
  EXPECT_EQ(source.value().entries[0].dynamic_shared_bytes,
            4 * WgmmaConvTile::stage_bytes(128, 128));
  EXPECT_NE(source.value().source.find("TILE_N = 128"), std::string::npos);
  auto paired = kernel_source(d, kTwoBlocks);
  ASSERT_TRUE(paired.is_ok()) << paired.status().message();
  EXPECT_EQ(paired.value().entries[0].dynamic_shared_bytes,
            3 * WgmmaConvTile::stage_bytes(128, 128));
  EXPECT_NE(paired.value().source.find("BLOCKS_PER_SM = 2"), std::string::npos);
  // The others follow the lead, at the end, the row-tap tiles last.
  std::vector<std::string> others = {std::string(kWgmmaVariant), std::string(kTwoBlocks),
                                     std::string(kHalf),         std::string(kWide),
                                     std::string(kWideHalf),     std::string(kHalfPingPong),
                                     std::string(kClusters),     std::string(kWideFilters)};
  others.insert(others.end(), row_taps.begin(), row_taps.end());
  EXPECT_EQ(std::vector<std::string>(ids.end() - 12, ids.end()), others);
  EXPECT_EQ(source.value().entries[0].tiles, 132 * 16 * 16 / 128);
  // K C R S filters: a first pass copies them into the workspace, which map 1 reads.
  c.filter_layout = test::TestLayout::nchw;
  auto packed = kernel_source(fwd(c, DataType::bf16), kWgmmaVariant);
  ASSERT_TRUE(packed.is_ok()) << packed.status().message();
  ASSERT_EQ(packed.value().entries.size(), 2u);
  EXPECT_EQ(packed.value().entries[0].name, "convjit_kernel_prepare");
  EXPECT_EQ(packed.value().workspace_bytes, 128u * 64 * 9 * 2);
  EXPECT_EQ(packed.value().tensor_maps[1].operand, TensorMapArgument::Operand::workspace);
  // A bwddata leads by dy's channels (the conv's filters); its tile's N is
  // dx's 64 channels.
  test::ConvCase few_filters = c;
  few_filters.filters = 32;
  // Over 18 K steps (128 filters) the 256 x 64 tile keeps its lead; 32
  // filters are 9.
  EXPECT_EQ(jit_variants(bwddata(c, DataType::bf16), {"sm_90", false}).front(), kWideHalf);
  EXPECT_EQ(jit_variants(bwddata(few_filters, DataType::bf16), {"sm_90", false}).front(),
            kHalfPingPong);
  few_filters.filters = 16;  // the narrowest step, as above
  EXPECT_EQ(jit_variants(bwddata(few_filters, DataType::bf16), {"sm_90", false}).front(),
            kWideHalf);
  few_filters.filters = 8;
  EXPECT_EQ(offered_last(jit_variants(bwddata(few_filters, DataType::bf16), {"sm_90", false})),
            kWideHalf);
  // Its K C R S filters through a packed, flipped copy; K R S C ones in
  // place, map 1 over w in MN-major boxes of 64 channels by 64 filters.
  auto flipped = kernel_source(bwddata(c, DataType::bf16), kWgmmaVariant);
  ASSERT_TRUE(flipped.is_ok()) << flipped.status().message();
  ASSERT_EQ(flipped.value().entries.size(), 2u);
  EXPECT_EQ(flipped.value().entries[0].name, "convjit_kernel_prepare");
  EXPECT_NE(flipped.value().source.find("FLIP = 1"), std::string::npos);
  EXPECT_NE(flipped.value().source.find("FILTERS_MN = 0"), std::string::npos);
  c.filter_layout = test::TestLayout::nhwc;
  auto in_place = kernel_source(bwddata(c, DataType::bf16), kWgmmaVariant);
  ASSERT_TRUE(in_place.is_ok()) << in_place.status().message();
  ASSERT_EQ(in_place.value().entries.size(), 1u);
  EXPECT_EQ(in_place.value().entries[0].name, "convjit_kernel");
  EXPECT_EQ(in_place.value().workspace_bytes, 0u);
  EXPECT_NE(in_place.value().source.find("FILTERS_MN = 1"), std::string::npos);
  const TensorMapArgument& w_map = in_place.value().tensor_maps.at(1);
  EXPECT_EQ(w_map.operand, TensorMapArgument::Operand::in1);
  EXPECT_EQ(w_map.spec.box[0], 64u);
  EXPECT_EQ(w_map.spec.box[4], 64u);
  // A strided bwddata leads by the same rule (dx's 64 channels); a bwdfilt where both its
  // tile's sides are 16 or more (its K step is pixels), or 8 or more with
  // 64 filters or fewer, in the 128 x 128 tile at two blocks an SM, never
  // the 128 x 64 one.
  test::ConvCase strided = c;
  strided.stride = {2, 2};
  EXPECT_EQ(jit_variants(bwddata(strided, DataType::bf16), {"sm_90", false}).front(),
            kHalfPingPong);
  const std::vector<std::string> filters_ids = jit_variants(bwdfilt(c, DataType::bf16), {"sm_90", false});
  EXPECT_EQ(filters_ids.front(), kTwoBlocks);
  EXPECT_EQ(std::count(filters_ids.begin(), filters_ids.end(), kHalf), 0);
  narrow.channels = 16;
  EXPECT_EQ(jit_variants(bwdfilt(narrow, DataType::bf16), {"sm_90", false}).front(), kTwoBlocks);
  narrow.channels = 8;
  EXPECT_EQ(offered_last(jit_variants(bwdfilt(narrow, DataType::bf16), {"sm_90", false})),
            kTwoBlocks);
  // A side of 8 where the tile has no second 64 filters, which it skips.
  const auto bwdfilt_lead = [](const test::ConvCase& n) {
    return jit_variants(bwdfilt(n, DataType::bf16), {"sm_90", false}).front();
  };
  test::ConvCase skipping = narrow;  // 8 channels
  skipping.filters = 64;
  EXPECT_EQ(bwdfilt_lead(skipping), kTwoBlocks);
  skipping.filters = 72;
  EXPECT_TRUE(folds_taps(bwdfilt(skipping, DataType::bf16)));
  EXPECT_EQ(bwdfilt_lead(skipping), kTwoBlocks) << "folded: rows of 24 channels";
  skipping.stride = {2, 2};  // keeps its taps
  EXPECT_FALSE(folds_taps(bwdfilt(skipping, DataType::bf16)));
  EXPECT_NE(bwdfilt_lead(skipping), kTwoBlocks) << "a second 64 filters: a side of 16 still";
  skipping.stride = {1, 1};
  skipping.channels = 16, skipping.filters = 8;
  EXPECT_EQ(bwdfilt_lead(skipping), kTwoBlocks);
  const Status tile = check_variant(bwdfilt(c, DataType::bf16), kHalf, {"sm_90", false});
  EXPECT_NE(tile.message().find("a bwdfilt's tile is 128 filters"), std::string::npos)
      << tile.message();
}

// The 128 x 64 tile leads where it pads the output's channels less than
// the 128 x 128 tile (64 or fewer; 129 to 192), or where its blocks fill
// the 132 SMs' two slots over their waves more than 1.2 times as fully
// (wgmma_lead_config); elsewhere the 128 x 128 tile at two blocks an SM.
// Its own ring: 4 stages of 24 KiB, two blocks an SM, and map 1's boxes
// of 64 filters.
TEST(EmulatedWgmmaConv, TheHalfTileLeadsWhereItPadsLessOrFillsTheWavesBetter) {
  constexpr std::string_view kTwoBlocks = kWgmmaConfigs[1].id, kHalf = kWgmmaConfigs[2].id;
  // 132 images of 16 x 16: 264 tiles of 128 pixels, one full wave of either.
  test::ConvCase c = channels_last_3x3(64, 64, {16, 16}, {1, 1}, {1, 1});
  c.batch = 132;
  const OpDescriptor d = fwd(c, DataType::bf16);
  EXPECT_EQ(wgmma_one_consumer_config(d).id, kHalf) << "64 filters";
  auto source = kernel_source(d, kHalf);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  EXPECT_NE(source.value().source.find("TILE_N = 64"), std::string::npos);
  EXPECT_EQ(source.value().entries[0].dynamic_shared_bytes,
            4 * WgmmaConvTile::stage_bytes(128, 64));
  EXPECT_EQ(source.value().tensor_maps[1].spec.box[4], 64u);
  c.filters = 72;  // two tiles of filters, 64 and 8, against one of 128: as much padding
  auto wide = kernel_source(fwd(c, DataType::bf16), kHalf);
  ASSERT_TRUE(wide.is_ok()) << wide.status().message();
  EXPECT_EQ(wide.value().entries[0].tiles, 132 * 16 * 16 / 128 * 2);
  EXPECT_EQ(wgmma_one_consumer_config(fwd(c, DataType::bf16)).id, kTwoBlocks);
  c.filters = 192;  // three tiles of 64 against two of 128
  EXPECT_EQ(wgmma_one_consumer_config(fwd(c, DataType::bf16)).id, kHalf);
  EXPECT_EQ(wgmma_one_consumer_config(bwddata(c, DataType::bf16)).id, kHalf)
      << "dx's 64 channels";
  c.filters = 256, c.channels = 256;  // 528 tiles or 1056: two waves or four, both full
  EXPECT_EQ(wgmma_one_consumer_config(fwd(c, DataType::bf16)).id, kTwoBlocks);
  EXPECT_EQ(wgmma_one_consumer_config(bwddata(c, DataType::bf16)).id, kTwoBlocks);
  test::ConvCase few = c;  // 48 images: 192 tiles fill 0.73 of a wave; 384, 0.73 of two
  few.batch = 48;
  EXPECT_EQ(wgmma_one_consumer_config(fwd(few, DataType::bf16)).id, kTwoBlocks);
  few.batch = 16;  // 64 tiles fill 0.24 of a wave, 128 tiles 0.48
  EXPECT_EQ(wgmma_one_consumer_config(fwd(few, DataType::bf16)).id, kHalf);
  few.batch = 100;  // 400 tiles fill 0.76 of two waves, 800 0.76 of four
  EXPECT_EQ(wgmma_one_consumer_config(fwd(few, DataType::bf16)).id, kTwoBlocks);
  few.batch = 75;  // 300 tiles fill 0.57 of two waves, 600 0.76 of three
  EXPECT_EQ(wgmma_one_consumer_config(fwd(few, DataType::bf16)).id, kHalf);
}

// Among the tiles of a block a tile (wgmma_tile_a_block_config), those of
// two consumers lead: 256 x 128 where
// the 128 x 64 tile does not pad less and its blocks (tiles times slices)
// keep at least two thirds as many of the 132 SMs busy in their first
// wave as the one-consumer configuration's would; else 256 x 64 wherever
// the 128 x 64 tile would lead; never for a bwdfilt (whose lead this is).  Every conv here has
// 8 K steps or more (the next test: fewer keep one consumer).
TEST(EmulatedWgmmaConv, TheTwoConsumerTilesLeadWhereTheyKeepTheSmsBusy) {
  constexpr std::string_view kTwoBlocks = kWgmmaConfigs[1].id, kHalf = kWgmmaConfigs[2].id,
                             kWide = kWgmmaConfigs[3].id, kWideHalf = kWgmmaConfigs[4].id;
  // 88 images of 16 x 16: 88 wide tiles against 176 of 128 x 128 (132 SMs busy).
  test::ConvCase c = channels_last_3x3(64, 128, {16, 16}, {1, 1}, {1, 1});
  c.batch = 88;
  EXPECT_EQ(wgmma_one_consumer_config(fwd(c, DataType::bf16)).id, kTwoBlocks);
  EXPECT_EQ(wgmma_tile_a_block_config(fwd(c, DataType::bf16)).id, kWide) << "88 of 132";
  EXPECT_EQ(wgmma_one_consumer_config(bwddata(c, DataType::bf16)).id, kHalf) << "dx's 64";
  EXPECT_EQ(wgmma_tile_a_block_config(bwddata(c, DataType::bf16)).id, kWideHalf);
  c.batch = 87;
  EXPECT_EQ(wgmma_tile_a_block_config(fwd(c, DataType::bf16)).id, kTwoBlocks) << "87 of 132";
  // ResNet-50's layer3 3 x 3 at batch 32: the 128 x 64 tile's 196 tiles
  // fill the waves better than 98 of 128 x 128; 100 of 256 x 64.
  c = channels_last_3x3(256, 256, {14, 14}, {1, 1}, {1, 1});
  c.batch = 32;
  EXPECT_EQ(wgmma_one_consumer_config(fwd(c, DataType::bf16)).id, kHalf);
  EXPECT_EQ(wgmma_tile_a_block_config(fwd(c, DataType::bf16)).id, kWideHalf);
  c.batch = 2;  // 7 tiles of 256 x 64 in 2 slices against 13 of 128 x 64 in 2
  EXPECT_EQ(wgmma_tile_a_block_config(fwd(c, DataType::bf16)).id, kWideHalf);
  // 75 images of 16 x 16: the 128 x 64 tile's 600 tiles fill their waves
  // better than 300 of 128 x 128, but 150 of 256 x 128 keep every SM busy.
  test::ConvCase full = channels_last_3x3(256, 256, {16, 16}, {1, 1}, {1, 1});
  full.batch = 75;
  EXPECT_EQ(wgmma_one_consumer_config(fwd(full, DataType::bf16)).id, kHalf);
  EXPECT_EQ(wgmma_tile_a_block_config(fwd(full, DataType::bf16)).id, kWide);
  full.batch = 16;  // 32 tiles of 256 x 128 in 2 slices: 64 SMs, the 128 x 64 tile's 128
  EXPECT_EQ(wgmma_one_consumer_config(fwd(full, DataType::bf16)).id, kHalf);
  EXPECT_EQ(wgmma_tile_a_block_config(fwd(full, DataType::bf16)).id, kWideHalf);
  c.batch = 132;  // 203 tiles of pixels: either one-consumer tile fills 0.77 of its waves
  EXPECT_EQ(wgmma_one_consumer_config(fwd(c, DataType::bf16)).id, kTwoBlocks);
  EXPECT_EQ(wgmma_tile_a_block_config(fwd(c, DataType::bf16)).id, kWide);
  test::ConvCase strided = c;
  strided.stride = {2, 2};
  EXPECT_EQ(wgmma_tile_a_block_config(bwddata(strided, DataType::bf16)).id, kWide);
  EXPECT_EQ(jit_variants(bwdfilt(c, DataType::bf16), {"sm_90", false}).front(), kTwoBlocks);
}

// Below 8 K steps a tile the wide tiles' shorter main loops do not repay
// their one block an SM: the one-consumer configuration leads among the
// tiles of a block a tile.
TEST(EmulatedWgmmaConv, TheTwoConsumerTilesLeadOnlyLongReductions) {
  constexpr std::string_view kTwoBlocks = kWgmmaConfigs[1].id, kHalf = kWgmmaConfigs[2].id,
                             kWide = kWgmmaConfigs[3].id;
  // 88 images of 16 x 16, 1 x 1: 88 wide tiles keep two thirds of the SMs
  // busy, as in the test above; 512 channels are 8 K steps, 448 are 7.
  test::ConvCase c = channels_last_3x3(512, 128, {16, 16}, {0, 0}, {0, 0});
  c.kernel = {1, 1};
  c.batch = 88;
  EXPECT_EQ(wgmma_tile_a_block_config(fwd(c, DataType::bf16)).id, kWide) << "8 steps";
  c.channels = 448;
  EXPECT_EQ(wgmma_one_consumer_config(fwd(c, DataType::bf16)).id, kTwoBlocks);
  EXPECT_EQ(wgmma_tile_a_block_config(fwd(c, DataType::bf16)).id, kTwoBlocks) << "7 steps";
  // A bwddata reduces over the 128 filters: 2 steps, so its 64 channels
  // of dx keep the 128 x 64 tile.
  c.channels = 64;
  EXPECT_EQ(wgmma_tile_a_block_config(bwddata(c, DataType::bf16)).id, kHalf);
}

// The ping-pong tiles lead among the tiles of a tap a K step
// (wgmma_tap_step_lead_config) on ResNet-50's layers at batch 32: 128 x 128 where a block takes
// several of its tiles, however short the reduction, and never in clusters of two (the H200 timed
// both slower: bench/results/2026-12-04-h200); 128 x 64 where it pads the output's channels less or
// its tiles stay one an SM; 256 x 128 where it leads among the tiles of a block a tile with one to
// two 128 x 128 tiles an SM over 16 K steps or more.  A bwdfilt keeps its lead.
TEST(EmulatedWgmmaConv, ThePingPongTilesLeadButWhereTheWideTileShortensALongMainLoop) {
  constexpr std::string_view kWide = kWgmmaConfigs[3].id, kPingPong = kWgmmaConfigs[5].id,
                             kHalfPingPong = kWgmmaConfigs[6].id;
  const auto layer = [](std::int64_t channels, std::int64_t filters, std::int64_t side,
                        std::int64_t kernel) {
    const std::int64_t pad = kernel / 2;
    test::ConvCase c = channels_last_3x3(channels, filters, {side, side}, {pad, pad}, {pad, pad});
    c.batch = 32, c.kernel = {kernel, kernel};
    return c;
  };
  test::ConvCase c = layer(64, 128, 56, 3);  // 784 tiles of 128 x 128, 9 K steps
  EXPECT_EQ(wgmma_tap_step_lead_config(fwd(c, DataType::bf16)).id, kPingPong);
  // Auto offers its row-tap tile first (RowTapTilesLead).
  EXPECT_EQ(jit_variants(fwd(c, DataType::bf16), {"sm_90", false}).front(),
            wgmma_lead_config(fwd(c, DataType::bf16)).id);
  // Its bwddata: dx's 64 channels, over 18 K steps: 256 x 64 keeps its lead.
  ASSERT_EQ(wgmma_tile_a_block_config(bwddata(c, DataType::bf16)).id, kWgmmaConfigs[4].id);
  EXPECT_EQ(wgmma_tap_step_lead_config(bwddata(c, DataType::bf16)).id, kWgmmaConfigs[4].id);
  c = layer(64, 64, 56, 3);
  EXPECT_EQ(wgmma_tap_step_lead_config(fwd(c, DataType::bf16)).id, kHalfPingPong) << "64 filters";
  c = layer(64, 256, 56, 1);  // 1 K step (layer1's conv3: 0.87x the 128 x 64 tile's time)
  EXPECT_EQ(wgmma_tap_step_lead_config(fwd(c, DataType::bf16)).id, kPingPong);
  // 196 tiles of 128 x 128: 18 K steps keep the wide tile, 8 do not.
  c = layer(128, 128, 28, 3);
  ASSERT_EQ(wgmma_tile_a_block_config(fwd(c, DataType::bf16)).id, kWide);
  EXPECT_EQ(wgmma_tap_step_lead_config(fwd(c, DataType::bf16)).id, kWide);
  c = layer(512, 128, 28, 1);
  ASSERT_EQ(wgmma_tile_a_block_config(fwd(c, DataType::bf16)).id, kWide);
  EXPECT_EQ(wgmma_tap_step_lead_config(fwd(c, DataType::bf16)).id, kPingPong) << "8 K steps";
  // 49 pixel tiles by 8 of filters: 392 tiles, 3 a block.
  c = layer(512, 1024, 14, 1);
  EXPECT_EQ(wgmma_tap_step_lead_config(fwd(c, DataType::bf16)).id, kPingPong);
  // 52 tiles of 128 x 128, 104 of 128 x 64: one an SM.
  c = layer(512, 512, 7, 3);
  EXPECT_EQ(wgmma_tap_step_lead_config(fwd(c, DataType::bf16)).id, kHalfPingPong);
  c = layer(256, 256, 14, 3);  // 98 tiles, 196 of 128 x 64
  EXPECT_EQ(wgmma_tap_step_lead_config(fwd(c, DataType::bf16)).id, kPingPong);
  // A strided bwddata: 208 tiles of its phases over 24 K steps.
  c = layer(512, 512, 14, 3);
  c.stride = {2, 2};
  ASSERT_EQ(wgmma_tile_a_block_config(bwddata(c, DataType::bf16)).id, kWide);
  EXPECT_EQ(wgmma_tap_step_lead_config(bwddata(c, DataType::bf16)).id, kWide);
  EXPECT_EQ(wgmma_tap_step_lead_config(bwdfilt(c, DataType::bf16)).id,
            wgmma_tile_a_block_config(bwdfilt(c, DataType::bf16)).id);
  // At batch 4, 8 tiles of 128 x 128 (16 of 128 x 64) over 72 K steps:
  // the slices of a block a tile keep their lead; over 36, not.
  c = layer(512, 512, 7, 3);
  c.batch = 4;
  EXPECT_EQ(wgmma_tap_step_lead_config(fwd(c, DataType::bf16)).id,
            wgmma_tile_a_block_config(fwd(c, DataType::bf16)).id);
  c.channels = 256;
  EXPECT_EQ(wgmma_tap_step_lead_config(fwd(c, DataType::bf16)).id, kHalfPingPong);
}

// Auto leads with a row-tap tile (wgmma_lead_config) in place of a
// ping-pong tile or 256 x 64: of 256 x 64 and 128 x 64 in ping-pong the
// one with the less tile work on the busiest SM (256 x 64 at equal work
// unless it slices its K), where that adds under a quarter to the
// lead's.  ResNet-50's 3 x 3 convs at batch 32, fwd and bwddata: layer1's
// in 128 x 64 (812 of its tiles against 406 of 256 x 64's: 7 and 4 an
// SM), layer3's in 256 x 64 (2 tiles an SM against 1 of twice the
// size), layer4's in 128 x 64 (1 an SM; 256 x 64's 64 tiles slice), but
// layer2's, whose 256 x 128 lead keeps its lead; CosmoFlow's conv2
// bwddata at batch 4 in 256 x 64, but its conv5 fwd, whose 128 x 64
// tiles the widened rows take from one an SM to two.  Not the 1 x 1 and
// strided convs, nor a bwdfilt.
TEST(EmulatedWgmmaConv, RowTapTilesLeadWhereTheirWidenedRowsAddUnderAQuarter) {
  constexpr std::string_view kWide = kWgmmaConfigs[3].id, kWideHalf = kWgmmaConfigs[4].id,
                             kPingPong = kWgmmaConfigs[5].id, kHalfPingPong = kWgmmaConfigs[6].id,
                             kWideHalfRows = kWgmmaConfigs[11].id,
                             kHalfPingPongRows = kWgmmaConfigs[12].id;
  const auto layer = [](std::int64_t channels, std::int64_t filters,
                        std::vector<std::int64_t> input, std::int64_t kernel, std::int64_t batch) {
    const std::vector<std::int64_t> pad(input.size(), kernel / 2);
    test::ConvCase c = channels_last_3x3(channels, filters, input, pad, pad);
    c.batch = batch, c.kernel.assign(input.size(), kernel);
    c.stride.assign(input.size(), 1), c.dilation.assign(input.size(), 1);
    return c;
  };
  const auto leads = [](const OpDescriptor& d, std::string_view before, std::string_view now) {
    SCOPED_TRACE(descriptor_name(d));
    EXPECT_EQ(wgmma_tap_step_lead_config(d).id, before);
    EXPECT_EQ(wgmma_lead_config(d).id, now);
  };
  test::ConvCase c = layer(64, 64, {56, 56}, 3, 32);
  leads(fwd(c, DataType::bf16), kHalfPingPong, kHalfPingPongRows);
  leads(bwddata(c, DataType::bf16), kHalfPingPong, kHalfPingPongRows);
  leads(bwdfilt(c, DataType::bf16), wgmma_tile_a_block_config(bwdfilt(c, DataType::bf16)).id,
        wgmma_tile_a_block_config(bwdfilt(c, DataType::bf16)).id);
  leads(fwd(layer(128, 128, {28, 28}, 3, 32), DataType::bf16), kWide, kWide);
  leads(fwd(layer(256, 256, {14, 14}, 3, 32), DataType::bf16), kPingPong, kWideHalfRows);
  leads(fwd(layer(512, 512, {7, 7}, 3, 32), DataType::bf16), kHalfPingPong, kHalfPingPongRows);
  leads(fwd(layer(64, 256, {56, 56}, 1, 32), DataType::bf16), kPingPong, kPingPong);
  c.stride = {2, 2};
  leads(fwd(c, DataType::bf16), wgmma_tap_step_lead_config(fwd(c, DataType::bf16)).id,
        wgmma_tap_step_lead_config(fwd(c, DataType::bf16)).id);
  // CosmoFlow's conv5 fwd: 128 tiles of 128 x 64, 160 over widened rows;
  // its 8 filter tiles then share their pixel tiles in clusters
  // (PixelClustersLeadWhereTheirLeadReadsEachPixelTile4TimesOrMore).
  leads(fwd(layer(256, 512, {8, 8, 8}, 3, 4), DataType::bf16), kHalfPingPong, kWgmmaConfigs[13].id);
  // Its conv2 bwddata: dx's 32 channels from dy's 64, 4096 tiles of 256 x
  // 64 or 4224 over widened rows, both 32 an SM.
  leads(bwddata(layer(32, 64, {64, 64, 64}, 3, 4), DataType::bf16), kWideHalf, kWideHalfRows);
}

// Auto's pixel clusters (pixel_cluster_lead): wgmma128x64pa in place of a
// ping-pong lead without row taps whose output channels make 4 filter
// tiles or more: ResNet-50's layer4.conv1 (8 filter tiles of 64) and
// layer4.conv3 (16 of 128), fwd, and conv1's transpose in bwddata;
// CosmoFlow's conv5 fwd.  Not over 2 filter tiles of 128 (ResNet-50's
// layer3.0.conv2, predicted 1.18x), a two-consumer lead
// (layer4.0.downsample's 256 x 128), a row-tap lead (layer4.conv2),
// channels that make no whole cluster (520 filters: 9 tiles of 64), nor
// a bwdfilt.
TEST(EmulatedWgmmaConv, PixelClustersLeadWhereTheirLeadReadsEachPixelTile4TimesOrMore) {
  constexpr std::string_view kPixelClusters = kWgmmaConfigs[13].id;
  const auto layer = [](std::int64_t channels, std::int64_t filters, std::int64_t size,
                        std::int64_t kernel, std::int64_t stride) {
    const std::vector<std::int64_t> pad(2, kernel / 2);
    test::ConvCase c = channels_last_3x3(channels, filters, {size, size}, pad, pad);
    c.batch = 32, c.kernel.assign(2, kernel), c.stride.assign(2, stride);
    return c;
  };
  const auto lead = [](const OpDescriptor& d) {
    SCOPED_TRACE(descriptor_name(d));
    return std::string(wgmma_lead_config(d).id);
  };
  EXPECT_EQ(lead(fwd(layer(2048, 512, 7, 1, 1), DataType::bf16)), kPixelClusters);
  EXPECT_EQ(lead(fwd(layer(512, 2048, 7, 1, 1), DataType::bf16)), kPixelClusters);
  EXPECT_EQ(lead(bwddata(layer(2048, 512, 7, 1, 1), DataType::bf16)), kPixelClusters);
  test::ConvCase cosmoflow = channels_last_3x3(256, 512, {8, 8, 8}, {1, 1, 1}, {1, 1, 1});
  cosmoflow.batch = 4, cosmoflow.kernel = {3, 3, 3}, cosmoflow.stride = {1, 1, 1};
  cosmoflow.dilation = {1, 1, 1};
  EXPECT_EQ(lead(fwd(cosmoflow, DataType::bf16)), kPixelClusters);
  for (const test::ConvCase& c : {layer(256, 256, 28, 3, 2), layer(1024, 2048, 14, 1, 2),
                                  layer(512, 512, 7, 3, 1), layer(2048, 520, 7, 1, 1)})
    EXPECT_NE(lead(fwd(c, DataType::bf16)), kPixelClusters);
  EXPECT_NE(lead(bwdfilt(layer(2048, 512, 7, 1, 1), DataType::bf16)), kPixelClusters);
}

}  // namespace
}  // namespace convjit
