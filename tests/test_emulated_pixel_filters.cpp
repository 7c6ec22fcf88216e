// The conv of short reductions over few filters (kernel_templates/conv/
// conv_pixels.cuh: a thread a strip of output pixels by a group of
// filters, all of w in shared memory) in the host emulator against the
// host reference, and where it applies (dispatcher/backends/jit/
// pixel_filters.hpp).  The kernel sums in f32 as the direct kernel does,
// so the dtype's usual tolerance (kernel_tolerance) holds.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/backends/emulator/emulator_backend.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/jit/pixel_filters.hpp"
#include "dispatcher/backends/jit/wgmma_conv.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "support/emulated_variant.hpp"
#include "support/jit_problem_set.hpp"

namespace convjit {
namespace {

OpDescriptor fwd(const test::ConvCase& c, DataType dtype) {
  return test::conv_descriptors(c, dtype, {Direction::fwd}).at(0);
}

// `shift`: a fused epilogue's bias and residual that many bytes off a
// 16-byte boundary.
void check(const OpDescriptor& d, std::mt19937& rng, double alpha = 1.0, double beta = 0.0,
           std::size_t shift = 0) {
  SCOPED_TRACE(descriptor_name(d));
  ASSERT_TRUE(pixel_filters_support(d).is_ok()) << pixel_filters_support(d).message();
  test::expect_emulated_variant_matches(d, rng, kPixelsVariant, alpha, beta, shift);
}

// Their inputs' extent at most in 1D, 2D and 3D: up to 90 pixels in 1D
// and 37 x 37 in 2D are several tiles of 8 x 64 outputs, and strips whose
// second pixel (32 columns on) is real.
constexpr std::int64_t kMaxInput[] = {90, 37, 6};

// Whether the kernel serves `d`; where not, that it refuses `d` for its
// filters and halo beyond the shared memory, the only rule random cases
// of one group may break.
bool served_or_too_large(const OpDescriptor& d) {
  const Status s = pixel_filters_support(d);
  if (!s.is_ok()) {
    EXPECT_NE(s.message().find("bytes of shared memory at most"), std::string::npos) << s.message();
  }
  return s.is_ok();
}

// Random convs of one group: 1D/2D/3D windows with strides, dilations and
// padding at every edge (some outputs see only padding), every layout of
// x and y and both of w, odd widths (a strip's second pixel past the
// end), 1 to 9 channels and 1 to 40 filters (a thread's group of 16
// filters partly or wholly past the last one, counts off the 8-filter
// chunk), in f32, f16 and bf16; every third with a fused epilogue and
// alpha/beta.  Those whose tile's halo would not fit its shared memory
// (wide strides and dilations over several channels in 3D) are refused
// for it by name.
TEST(EmulatedPixelFilters, RandomConvolutions) {
  std::mt19937 rng(5100);
  const DataType dtypes[] = {DataType::f32, DataType::f16, DataType::bf16};
  int served = 0;
  for (int i = 0; i < 24; ++i) {
    test::ConvCase c;
    c.batch = 1 + i % 2;
    c.channels = 1 + (i * 5) % 9;
    c.filters = test::kPixelFilterCounts[i % 9];
    test::randomize_windows(c, rng, 1 + i % 3, kMaxInput[i % 3]);
    SCOPED_TRACE(c.describe());
    OpDescriptor d = fwd(c, dtypes[i % 3]);
    if (!served_or_too_large(d)) continue;
    ++served;
    if (i % 3 == 1) {
      d.activation = Activation::silu;
      d.epilogue_operands = kEpilogueBias | kEpilogueResidual;
    }
    check(d, rng, i % 3 == 1 ? 0.5 : 1.0, i % 3 == 1 ? 0.25 : 0.0);
  }
  EXPECT_GE(served, 16);
}

// Random bwddata: of unit strides (every third), as the forward conv of
// dy with the filters transposed and flipped, and of strides 1 to 3 by
// stride phases, with phases no tap lands on (a stride beyond a dilated
// window's taps), 1D/2D/3D windows with dilations and padding at every
// edge, up to a tap's reach and one past it (dx's edge pixels then see
// no dy), every layout, odd widths, 1 to 40 channels (the forward conv's
// filters) over 1 to 9 filters, in f32, f16 and bf16; every third with
// alpha and beta.  Those whose halo does not fit are refused by name.
TEST(EmulatedPixelFilters, RandomBackwardData) {
  std::mt19937 rng(5102);
  const DataType dtypes[] = {DataType::f32, DataType::f16, DataType::bf16};
  int served = 0;
  for (int i = 0; i < 36; ++i) {
    test::ConvCase c;
    c.batch = 1 + i % 2;
    c.filters = 1 + (i * 5) % 9;
    c.channels = test::kPixelFilterCounts[i % 9];
    test::randomize_windows(c, rng, 1 + i % 3, kMaxInput[i % 3]);
    if (i % 3 == 0)
      for (std::int64_t& stride : c.stride) stride = 1;
    SCOPED_TRACE(c.describe());
    const OpDescriptor d = test::conv_descriptors(c, dtypes[i % 3], {Direction::bwddata}).at(0);
    if (!served_or_too_large(d)) continue;
    ++served;
    check(d, rng, i % 3 == 1 ? 0.5 : 1.0, i % 3 == 1 ? 0.25 : 0.0);
  }
  EXPECT_GE(served, 24);
}

// The layers it is for: YOLO11n's stem (3 channels, 16 filters, 3 x 3 of
// stride 2) and its 3 x 3 convs of 16 channels to 8 filters and 8 to 16,
// on images of 11 x 100 (outputs over two tiles of 8 x 64, both pixels of
// a strip, 32 columns apart, real), channels-last (16-byte chunks of y)
// and NCHW, with the fused Conv+BN+SiLU's bias; a bias and residual 2
// bytes off a 16-byte boundary, which the chunks must read element by
// element.  And the bwddata of those and of b1's 16 channels to 32
// filters of stride 2 (by phases; its fwd's halo does not fit), with
// alpha and beta.
TEST(EmulatedPixelFilters, YoloSmallChannelLayers) {
  std::mt19937 rng(5101);
  // C, K, stride, whether the fwd is served.
  const std::int64_t shapes[][4] = {{3, 16, 2, 1}, {16, 8, 1, 1}, {8, 16, 1, 1}, {16, 32, 2, 0}};
  for (const auto& [channels, filters, stride, forward] : shapes)
    for (test::TestLayout layout : {test::TestLayout::nhwc, test::TestLayout::nchw}) {
      const test::ConvCase c = test::small_channel_3x3(channels, filters, stride, layout, {11, 100});
      SCOPED_TRACE(c.describe());
      OpDescriptor d = fwd(c, DataType::bf16);
      EXPECT_EQ(pixel_filters_support(d).is_ok(), forward != 0);
      if (forward != 0) {
        d.activation = Activation::silu;
        d.epilogue_operands = kEpilogueBias;
        check(d, rng);
        d.epilogue_operands = kEpilogueBias | kEpilogueResidual;
        check(d, rng, 1.0, 0.5, 2);
      }
      const OpDescriptor back =
          test::conv_descriptors(c, DataType::bf16, {Direction::bwddata}).at(0);
      check(back, rng);
      check(back, rng, 0.5, 0.25);
    }
}

// Beyond the launch's cap on blocks (2^20), blocks loop over the tiles
// (the grid's stride): grids cut to 3 blocks, each taking 10 tiles of a
// fwd of stride 2 over 2 images of 40 x 150 output pixels (5 x 3 tiles
// an image), and 40 of its bwddata's, whose tiles cycle through the 4
// phases; alpha and beta.
TEST(EmulatedPixelFilters, BlocksLoopOverTheTilesBeyondTheGrid) {
  std::mt19937 rng(5103);
  test::ConvCase c;
  c.batch = 2, c.channels = 3, c.filters = 5, c.input = {80, 300}, c.kernel = {3, 3};
  c.stride = {2, 2}, c.pad_begin = {1, 1}, c.layout = test::TestLayout::nhwc;
  for (Direction direction : {Direction::fwd, Direction::bwddata}) {
    const OpDescriptor d = test::conv_descriptors(c, DataType::f32, {direction}).at(0);
    SCOPED_TRACE(descriptor_name(d));
    auto source = kernel_source(d, kPixelsVariant);
    ASSERT_TRUE(source.is_ok()) << source.status().message();
    KernelEntry& entry = source.value().entries.at(0);
    EXPECT_GE(entry.threads, 3 * 5 * 256) << "at least 5 tiles a block";
    entry.threads = 3 * 256;
    auto kernel = emulate_kernel_source(d, std::move(source).value());
    ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
    const test::HostOperands host = test::random_operands(d, rng, 0.5, 0.25);
    std::vector<unsigned char> out = host.out;
    const Status s = kernel.value()->execute(host.args(d, out.data()));
    ASSERT_TRUE(s.is_ok()) << s.message();
    test::expect_matches_reference(d, host, out, kernel_tolerance(d));
  }
}

// Its launch: a block of 256 threads per tile of 8 x 64 output pixels,
// its shared memory the filters and the tile's input halo in f32; and
// where it does not apply, refused by name with the rule and the way
// out: other directions, groups, f64, and filters and halos beyond its
// shared memory.
TEST(EmulatedPixelFilters, LaunchesAStripByFiltersAndRefusesWhatItCannotHold) {
  test::ConvCase c;
  c.batch = 2, c.channels = 3, c.filters = 24, c.input = {9, 11}, c.kernel = {3, 3};
  c.stride = {2, 2}, c.pad_begin = {1, 1}, c.layout = test::TestLayout::nhwc;
  auto source = kernel_source(fwd(c, DataType::bf16), kPixelsVariant);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  EXPECT_EQ(source.value().template_name, "conv/conv_pixels.cuh");
  ASSERT_EQ(source.value().entries.size(), 1u);
  EXPECT_EQ(source.value().entries[0].threads, 2 * 256) << "a tile of 5 x 6 pixels an image";
  // 3 x 9 x 24 filters; 3 channels of 17 x 129 pixels for 8 x 64 outputs of stride 2.
  EXPECT_EQ(source.value().entries[0].dynamic_shared_bytes, (3u * 9 * 24 + 3 * 17 * 129) * 4);
  const auto constant = [](const KernelSource& k, std::string_view name) {
    for (const ProblemConstant& pc : k.constants)
      if (pc.name == name) return pc.value;
    ADD_FAILURE() << "no constant " << name;
    return -1ll;
  };
  EXPECT_EQ(constant(source.value(), "FLIP"), 0);

  // A bwddata of stride 1: the forward conv of dy (24 channels of 9 x 11)
  // to dx's 3 filters, read flipped; tiles of dx.
  test::ConvCase unit = c;
  unit.stride = {1, 1};
  auto back = kernel_source(
      test::conv_descriptors(unit, DataType::bf16, {Direction::bwddata}).at(0), kPixelsVariant);
  ASSERT_TRUE(back.is_ok()) << back.status().message();
  EXPECT_EQ(back.value().template_name, "conv/conv_pixels.cuh");
  EXPECT_EQ(constant(back.value(), "FLIP"), 1);
  EXPECT_EQ(constant(back.value(), "C"), 24);
  EXPECT_EQ(constant(back.value(), "K"), 3);
  EXPECT_EQ(back.value().entries[0].threads, 2 * 2 * 256) << "dx: 2 tiles of 8 x 64 an image";
  // 24 x 9 x 3 filters, rounded up to 4; 24 channels of 10 x 66 dy pixels.
  EXPECT_EQ(back.value().entries[0].dynamic_shared_bytes, (24u * 9 * 4 + 24 * 10 * 66) * 4);
  EXPECT_EQ(constant(back.value(), "PHASED"), 0);

  // The bwddata of stride 2 by phases: dy's 24 channels of 5 x 6, dx's 3
  // filters unflipped; 4 phases an image of dx, each one tile of 5 x 6
  // pixels, whose halo is 8 + 1 rows of 64 + 1 (the taps 2 rows apart
  // land 1 apart).
  auto strided = kernel_source(
      test::conv_descriptors(c, DataType::bf16, {Direction::bwddata}).at(0), kPixelsVariant);
  ASSERT_TRUE(strided.is_ok()) << strided.status().message();
  EXPECT_EQ(constant(strided.value(), "FLIP"), 0);
  EXPECT_EQ(constant(strided.value(), "PHASED"), 1);
  EXPECT_EQ(strided.value().entries[0].threads, 2 * 4 * 256);
  EXPECT_EQ(strided.value().entries[0].dynamic_shared_bytes, (24u * 9 * 4 + 24 * 9 * 65) * 4);

  const auto refusal = [](const OpDescriptor& d) { return pixel_filters_support(d).message(); };
  EXPECT_NE(refusal(test::conv_descriptors(c, DataType::bf16, {Direction::bwdfilt}).at(0))
                .find("serves conv fwd and bwddata only"),
            std::string::npos);
  EXPECT_NE(refusal(fwd(c, DataType::f64)).find("use direct"), std::string::npos);
  test::ConvCase grouped = c;
  grouped.groups = 3, grouped.filters = 6;
  EXPECT_NE(refusal(fwd(grouped, DataType::bf16)).find("one group; this one has 3"),
            std::string::npos);
  test::ConvCase wide = c;
  wide.channels = 64, wide.filters = 64;  // 64 x 9 x 64 floats
  const std::string too_many = refusal(fwd(wide, DataType::bf16));
  EXPECT_NE(too_many.find("in 98304 bytes of shared memory at most"), std::string::npos)
      << too_many;
  EXPECT_NE(too_many.find("take 708864"), std::string::npos) << too_many;

  const Status unknown = check_variant(fwd(wide, DataType::bf16), kPixelsVariant, {"", false});
  EXPECT_FALSE(unknown.is_ok());
}

// Auto leads with it where the H200 timed it fastest (pixel_filters.hpp):
// YOLO11n's stem and its 3 x 3 conv of 8 channels to 16 filters (batch
// 32, channels-last and NCHW), on every architecture (it needs no tensor
// cores); it is offered last, after every variant but the Hopper conv's
// trailing ones, on the 3 x 3 conv of 16 channels to 8 filters (a
// reduction of 144, where it lost), the convs of 32 filters and a 1D
// conv.  What it does not serve it is not offered for.
TEST(EmulatedPixelFilters, LeadsOnFewFiltersOverShortReductions) {
  test::ConvCase c;
  c.batch = 32, c.kernel = {3, 3}, c.stride = {1, 1}, c.pad_begin = {1, 1}, c.pad_end = {1, 1};
  const auto first = [&](const char* arch) {
    return jit_variants(fwd(c, DataType::bf16), {arch, false}).front();
  };
  const std::int64_t leads[][4] = {{3, 16, 640, 2}, {8, 16, 160, 1}};
  for (const auto& [channels, filters, size, stride] : leads)
    for (test::TestLayout layout : {test::TestLayout::nhwc, test::TestLayout::nchw}) {
      c.channels = channels, c.filters = filters, c.input = {size, size};
      c.stride = {stride, stride}, c.layout = layout;
      SCOPED_TRACE(c.describe());
      EXPECT_EQ(first("sm_90"), kPixelsVariant);
      EXPECT_EQ(first("sm_80"), kPixelsVariant);
      EXPECT_EQ(first(""), kPixelsVariant);
    }
  c.layout = test::TestLayout::nhwc, c.stride = {1, 1};
  for (const auto& [channels, filters, size] :
       {std::array<std::int64_t, 3>{16, 8, 160}, std::array<std::int64_t, 3>{16, 32, 80}}) {
    c.channels = channels, c.filters = filters, c.input = {size, size};
    SCOPED_TRACE(c.describe());
    EXPECT_NE(first("sm_90"), kPixelsVariant);
    for (const char* arch : {"sm_90", "sm_80"}) {
      std::vector<std::string> ids = jit_variants(fwd(c, DataType::bf16), {arch, false});
      while (find_wgmma_config(ids.back()) != nullptr) ids.pop_back();
      EXPECT_EQ(ids.back(), kPixelsVariant) << arch;
    }
  }

  c.channels = 32, c.filters = 16;
  EXPECT_NE(first("sm_90"), kPixelsVariant);
  c.channels = 8, c.input = {200}, c.kernel = {3}, c.stride = {1}, c.pad_begin = {1};
  c.pad_end = {1};
  EXPECT_NE(first("sm_90"), kPixelsVariant);
  c.groups = 8, c.filters = 8;
  for (const std::string& id : jit_variants(fwd(c, DataType::bf16), {"sm_90", false}))
    EXPECT_NE(id, kPixelsVariant);
}

// Auto leads with it on the bwddata of YOLO11n's 3 x 3 conv of 16
// channels to 8 filters (the forward conv of 8 channels of dy to 16
// filters, a reduction of 72), channels-last and NCHW; it is offered
// last on the bwddata of the conv of 8 channels to 16 filters (a
// reduction of 144), of b1's 16 channels to 32 filters of stride 2 (by
// phases, which lost 4.6x on the H200) and of b4's 32 channels to 16
// filters (32 filters of dx).
TEST(EmulatedPixelFilters, LeadsOnTheBackwardDataOfFewChannels) {
  test::ConvCase c;
  c.batch = 32, c.kernel = {3, 3}, c.pad_begin = {1, 1}, c.pad_end = {1, 1};
  const auto variants = [&](const char* arch) {
    return jit_variants(test::conv_descriptors(c, DataType::bf16, {Direction::bwddata}).at(0),
                        {arch, false});
  };
  c.channels = 16, c.filters = 8, c.input = {160, 160}, c.stride = {1, 1};
  for (test::TestLayout layout : {test::TestLayout::nhwc, test::TestLayout::nchw}) {
    c.layout = layout;
    SCOPED_TRACE(c.describe());
    for (const char* arch : {"sm_90", "sm_80", ""})
      EXPECT_EQ(variants(arch).front(), kPixelsVariant);
  }
  c.layout = test::TestLayout::nhwc;
  const std::int64_t others[][4] = {{8, 16, 160, 1}, {16, 32, 320, 2}, {32, 16, 80, 1}};
  for (const auto& [channels, filters, size, stride] : others) {
    c.channels = channels, c.filters = filters, c.input = {size, size};
    c.stride = {stride, stride};
    SCOPED_TRACE(c.describe());
    std::vector<std::string> ids = variants("sm_90");
    EXPECT_NE(ids.front(), kPixelsVariant);
    while (find_wgmma_config(ids.back()) != nullptr) ids.pop_back();
    EXPECT_EQ(ids.back(), kPixelsVariant);
  }
}

}  // namespace
}  // namespace convjit
