// Properties of the JIT's kernels that the emulator's memory counters
// (dispatcher/backends/emulator/memory_counters.hpp) check without a GPU:
// every tensor-core variant's ldmatrix and cp.async shared-memory accesses
// are free of bank conflicts and its shared stores at most 2-way, and the channels-last vector
// kernels move their activations in whole 32-byte sectors; a strided conv's footprint of x and a
// pixel cluster's reads of it.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "dispatcher/backends/emulator/emulator_backend.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/settings.hpp"
#include "support/jit_problem_set.hpp"
#include "support/reduced_run.hpp"

namespace convjit {
namespace {

using emulator::KernelMemoryCounters;
using emulator::MemoryOp;
using emulator::MemorySpace;
using emulator::SiteCounters;

// Blocks run per kernel: the first and the last, which hold a grid's
// partial tiles.
constexpr unsigned kSampled = 2;

// A conv with channel and filter counts on the 16-byte chunk, as the
// tensor-core loaders' cp.async path takes them, in either layout.
test::ConvCase chunked_case(std::mt19937& rng, int spatial, test::TestLayout layout) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  test::ConvCase c;
  c.groups = pick(0, 3) == 0 ? 2 : 1;
  c.channels = c.groups * 8 * pick(1, 8);
  c.filters = c.groups * 8 * pick(1, 9);
  c.batch = pick(1, 2);
  for (int i = 0; i < spatial; ++i) {
    const std::int64_t k = pick(0, 1) == 0 ? 1 : 3;
    c.kernel.push_back(k);
    c.stride.push_back(pick(1, 2));
    c.dilation.push_back(1);
    c.input.push_back(pick(k, spatial == 3 ? 6 : 14));
    c.pad_begin.push_back(k / 2);
    c.pad_end.push_back(k / 2);
  }
  c.layout = c.filter_layout = layout;
  return c;
}

std::vector<KernelMemoryCounters> counted(const OpDescriptor& d, const std::string& variant) {
  auto counters = count_variant_memory(d, variant, kSampled);
  EXPECT_TRUE(counters.is_ok()) << counters.status().message();
  return counters.is_ok() ? std::move(counters).value() : std::vector<KernelMemoryCounters>{};
}

// A channels-last 1 x 1 conv fwd in bf16, unpadded: a GEMM of M = the
// output's pixels, N = filters, K = channels.
OpDescriptor pointwise_fwd(std::int64_t batch, std::int64_t channels, std::int64_t filters,
                           std::vector<std::int64_t> input,
                           std::vector<std::int64_t> stride = {1, 1}) {
  test::ConvCase c;
  c.batch = batch, c.channels = channels, c.filters = filters, c.input = std::move(input);
  c.kernel = c.dilation = {1, 1}, c.stride = std::move(stride);
  c.pad_begin = c.pad_end = {0, 0};
  c.layout = c.filter_layout = test::TestLayout::nhwc;
  return test::conv_descriptors(c, DataType::bf16, {Direction::fwd}).at(0);
}

std::string site_name(const SiteCounters& s) {
  return fmt::format("{} {} B of {}", emulator::memory_op_name(s.site.space, s.site.op),
                     s.site.bytes, s.object);
}

class KernelMemory : public ::testing::Test {
 protected:
  // TF32 on: f32 is then offered the tensor-core tiles too.
  KernelMemory() { SettingsStore::instance().set_allow_tf32(true); }
  ~KernelMemory() override { SettingsStore::instance().set_allow_tf32(std::nullopt); }
};

TEST_F(KernelMemory, TensorCoreLdmatrixAndCpAsyncAreConflictFree) {
  std::mt19937 rng(38);
  int checked = 0;
  for (int i = 0; i < 12; ++i) {
    const auto layout = i % 2 == 0 ? test::TestLayout::nhwc : test::TestLayout::nchw;
    const test::ConvCase c = chunked_case(rng, 1 + i % 3, layout);
    const DataType dtype = std::array{DataType::f16, DataType::bf16, DataType::f32}[i % 3];
    for (const OpDescriptor& d : test::conv_descriptors(c, dtype)) {
      SCOPED_TRACE(descriptor_name(d));
      for (const std::string& variant : jit_variants(d, variant_context(""))) {
        if (variant.rfind("tc", 0) != 0) continue;
        SCOPED_TRACE(variant);
        for (const KernelMemoryCounters& k : counted(d, variant))
          for (const SiteCounters& s : k.sites) {
            if (s.site.space != MemorySpace::shared) continue;
            if (s.site.op == MemoryOp::ldmatrix || s.site.op == MemoryOp::async_copy) {
              EXPECT_EQ(s.cost, s.ideal) << site_name(s);
              ++checked;
            }
            // The word-by-word fill and the epilogue's staging of fragments:
            // 2-way at worst (gemm/tile_epilogue.cuh's pitch).
            if (s.site.op == MemoryOp::store) {
              EXPECT_LE(s.cost, 2 * s.ideal) << site_name(s);
            }
          }
      }
    }
  }
  EXPECT_GT(checked, 100);  // the loaders did take the cp.async and ldmatrix paths
}

// The tensor pipe's work: a 1x1 conv is a GEMM of M = pixels, N =
// filters, K = channels, and the tile's warps issue one m16n8k16 per
// 16 x 8 x 16 piece of the tiles covering it, edges included.
TEST_F(KernelMemory, TheMmaCountIsTheGemmsTilesInMmaShapes) {
  // M = 130 pixels: a partial third tile of 64.
  const OpDescriptor d = pointwise_fwd(1, 32, 40, {10, 13});
  const auto k = counted(d, "tc64x64");
  ASSERT_FALSE(k.empty());
  const KernelMemoryCounters& main = k.back();  // after any filter packing
  EXPECT_EQ(main.blocks, 3u);
  EXPECT_EQ(main.sampled_blocks, 2u);
  // 3 tiles of 64 x 64, each (64 / 16) x (64 / 8) mma shapes over K = 32 in 2 steps.
  EXPECT_DOUBLE_EQ(main.mma_instructions, 3.0 * 4 * 8 * 2);
}

// A persistent grid's tensor work is its tiles', though the blocks sampled
// (the first and the last) are not its average: 140 ping-pong tiles of
// 128 x 64 on 132 blocks give block 0 two and block 131 one.  Scaled by the
// blocks, the count would be 132 x 1.5 tiles' worth.
TEST_F(KernelMemory, APersistentGridsTensorWorkIsItsTilesWhicheverBlocksAreSampled) {
  const auto per_tile = [&](std::int64_t pixel_tiles) {
    const auto k = counted(pointwise_fwd(1, 64, 64, {pixel_tiles, 128}), "wgmma128x64p");
    EXPECT_EQ(k.size(), 1u);
    if (k.empty()) return 0.0;
    EXPECT_EQ(k.back().blocks, static_cast<unsigned>(std::min<std::int64_t>(pixel_tiles, 132)));
    return k.back().wgmma_mma_equivalents / static_cast<double>(pixel_tiles);
  };
  const double one_a_block = per_tile(100);
  ASSERT_GT(one_a_block, 0);
  EXPECT_DOUBLE_EQ(per_tile(140), one_a_block);
}

// A last pixel tile of 64 rows or fewer pads the rest: its consumer skips
// the wgmmas of its bottom 64 rows.  160 pixels make a tile of 128 and one
// of 32 rows (a 256-row tile: a consumer of 128 and one of 32), so the
// tensor work is three quarters of 256 pixels' in every Hopper conv shape.
TEST_F(KernelMemory, AConsumerWhoseBottomRowsHoldNoPixelsSkipsTheirWgmmas) {
  const auto tensor_work = [&](std::int64_t width, const std::string& variant) {
    double work = 0;
    for (const KernelMemoryCounters& k : counted(pointwise_fwd(1, 64, 256, {2, width}), variant))
      work += k.wgmma_mma_equivalents;
    return work;
  };
  for (const std::string variant :
       {"wgmma128x128", "wgmma128x64", "wgmma256x128", "wgmma128x64p", "wgmma128x64pa"}) {
    SCOPED_TRACE(variant);
    const double whole = tensor_work(128, variant);
    ASSERT_GT(whole, 0);
    EXPECT_DOUBLE_EQ(tensor_work(80, variant), 0.75 * whole);
  }
}

// Sector efficiency: the ideal sectors over those moved, of every global
// buffer or of the activations only (not the filters or the workspace).
double efficiency(const KernelMemoryCounters& k, bool activations_only) {
  double cost = 0, ideal = 0;
  for (const SiteCounters& s : k.sites) {
    if (s.site.space != MemorySpace::global) continue;
    const bool activation = s.object == "x" || s.object == "y" || s.object == "dx" ||
                            s.object == "dy" || s.object == "residual";
    if (activations_only && !activation) continue;
    cost += s.cost;
    ideal += s.ideal;
  }
  return cost > 0 ? ideal / cost : 1.0;
}

// Channels-last windows whose pixels fill whole 32-byte sectors (16
// channels in 16 bits): with fewer, or a count off the sector, a pixel
// shares its sectors with its neighbours, which a strided or halo'd
// window does not read, whatever the kernel.
template <class Case>
void randomize_chunked_windows(Case& c, std::mt19937& rng, int spatial) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  c.batch = pick(1, 2);
  c.channels = 16 * pick(1, 5);
  for (int i = 0; i < spatial; ++i) {
    c.stride.push_back(pick(1, 2));
    c.dilation.push_back(1);
    c.input.push_back(pick(3, spatial == 3 ? 6 : 12));
    c.pad_begin.push_back(1);
    c.pad_end.push_back(1);
  }
  c.layout = c.filter_layout = test::TestLayout::nhwc;
}

// Each descriptor's `variant` reaches 90% sector efficiency; returns the
// kernels checked.
int expect_whole_sectors(const std::vector<OpDescriptor>& descriptors, const std::string& variant,
                         bool activations_only) {
  int checked = 0;
  for (const OpDescriptor& d : descriptors) {
    SCOPED_TRACE(descriptor_name(d));
    for (const KernelMemoryCounters& k : counted(d, variant)) {
      EXPECT_GE(efficiency(k, activations_only), 0.9);
      ++checked;
    }
  }
  return checked;
}

TEST_F(KernelMemory, ChannelsLastVectorPoolsMoveWholeSectors) {
  std::mt19937 rng(381);
  int checked = 0;
  for (int i = 0; i < 9; ++i) {
    test::PoolCase c;
    randomize_chunked_windows(c, rng, 1 + i % 3);
    c.window.assign(c.input.size(), 3);
    c.mode = std::array{CONVJIT_POOL_MAX, CONVJIT_POOL_AVG_EXCLUDE_PAD,
                        CONVJIT_POOL_AVG_INCLUDE_PAD}[i % 3];
    checked += expect_whole_sectors(
        test::pool_descriptors(c, i % 2 ? DataType::bf16 : DataType::f32), "vector", false);
  }
  EXPECT_EQ(checked, 18);
}

// The activations only.  The filters (a few KB, which every thread reads
// one weight at a time and L1 serves) and bwdfilt's partial sums (a
// filter-major workspace, 8 weights a thread) are not whole-sector
// accesses: bench/results/2026-11-26-bottleneck-model says what that costs.
TEST_F(KernelMemory, ChannelsLastDepthwiseMovesItsActivationsInWholeSectors) {
  std::mt19937 rng(382);
  int checked = 0;
  for (int i = 0; i < 6; ++i) {
    test::ConvCase c;
    randomize_chunked_windows(c, rng, 1 + i % 3);
    c.groups = c.filters = c.channels;
    c.kernel.assign(c.input.size(), 3);
    checked += expect_whole_sectors(
        test::conv_descriptors(c, i % 2 ? DataType::bf16 : DataType::f32), "depthwise", true);
  }
  EXPECT_GE(checked, 18);
}

// The filters' copy (conv/packed_filters.cuh) of LBANN's and PyTorch's
// K C R S filters under channels-last activations, for the Hopper conv
// and the tensor-core tiles, fwd and bwddata: it reads w in whole
// sectors, a tile of contiguous runs at a time, where gathering a tap's
// channels read each sector once a tap (9x the sectors for a 3 x 3).
// Within 1.25x: a bwddata's runs (8 channels' taps, 144 bytes for a
// 3 x 3) start off the sectors, one more a run (1.11x here).
TEST_F(KernelMemory, KcrsFilterCopiesReadWholeSectors) {
  int checked = 0;
  for (const std::vector<std::int64_t>& kernel :
       {std::vector<std::int64_t>{3, 3}, std::vector<std::int64_t>{3, 3, 3}}) {
    test::ConvCase c;
    c.batch = 1, c.channels = 40, c.filters = 72;
    c.kernel = kernel;
    c.input = std::vector<std::int64_t>(kernel.size(), 6);
    c.stride = c.dilation = c.pad_begin = c.pad_end = std::vector<std::int64_t>(kernel.size(), 1);
    c.layout = test::TestLayout::nhwc, c.filter_layout = test::TestLayout::nchw;
    for (DataType dtype : {DataType::bf16, DataType::f32})
      for (const OpDescriptor& d :
           test::conv_descriptors(c, dtype, {Direction::fwd, Direction::bwddata})) {
        SCOPED_TRACE(descriptor_name(d));
        for (const std::string& variant : test::sweep(jit_variants(d, variant_context("")))) {
          if (variant.rfind("tc", 0) != 0 && variant.rfind("wgmma", 0) != 0) continue;
          SCOPED_TRACE(variant);
          for (const KernelMemoryCounters& k : counted(d, variant)) {
            double w_cost = 0, w_ideal = 0;
            bool copies = false;
            for (const SiteCounters& s : k.sites) {
              if (s.site.space != MemorySpace::global) continue;
              copies |= s.site.op == MemoryOp::store && s.object == "workspace";
              if (s.site.op == MemoryOp::load && s.object == "w")
                w_cost += s.cost, w_ideal += s.ideal;
            }
            if (!copies || w_ideal == 0) continue;
            EXPECT_LE(w_cost, 1.25 * w_ideal);
            ++checked;
          }
        }
      }
  }
  EXPECT_GE(checked, 8);
}

// A Hopper bwdfilt into K C R S dw, whose channels lie 9 weights apart:
// its tiles' threads store f32 partial sums, 8 sectors a warp's store of
// 256 bytes, and the second pass writes dw along its taps, a warp's 64
// bytes in 2 or 3 sectors.  Its tiles storing dw themselves took 32
// sectors a warp's 64 bytes, and a second pass taking the weights in the
// partial sums' order, 18.  Into K R S C dw the tiles store it themselves.
TEST_F(KernelMemory, AHopperBwdfiltWritesKcrsDwAlongItsTaps) {
  test::ConvCase c;
  c.batch = 1, c.channels = 64, c.filters = 128, c.input = {8, 8}, c.kernel = {3, 3};
  c.stride = c.dilation = c.pad_begin = c.pad_end = {1, 1};
  c.layout = test::TestLayout::nhwc, c.filter_layout = test::TestLayout::nchw;
  const auto stores = [](const KernelMemoryCounters& k) {
    SiteCounters all;
    for (const SiteCounters& s : k.sites)
      if (s.site.space == MemorySpace::global && s.site.op == MemoryOp::store)
        all.instructions += s.instructions, all.cost += s.cost, all.ideal += s.ideal;
    return all;
  };
  const OpDescriptor kcrs = test::conv_descriptors(c, DataType::bf16, {Direction::bwdfilt}).at(0);
  const auto k = counted(kcrs, "wgmma128x128");
  ASSERT_EQ(k.size(), 2u) << "the tiles, then the second pass";
  const SiteCounters tiles = stores(k[0]), finish = stores(k[1]);
  ASSERT_GT(tiles.instructions, 0);
  EXPECT_LE(tiles.cost / tiles.instructions, 8.0) << "f32 pairs, 4 lanes' a sector";
  ASSERT_GT(finish.instructions, 0);
  EXPECT_LE(finish.cost / finish.instructions, 3.0) << "a warp's 32 weights side by side";
  EXPECT_LE(finish.cost, 1.5 * finish.ideal);
  c.filter_layout = test::TestLayout::nhwc;
  const OpDescriptor krsc = test::conv_descriptors(c, DataType::bf16, {Direction::bwdfilt}).at(0);
  EXPECT_EQ(counted(krsc, "wgmma128x128").size(), 1u) << "K R S C dw: no second pass";
}

// The sampled blocks' footprint is scaled to the grid, as if no two blocks
// shared a sector; x's is capped at the part the conv's windows reach
// (window_reach.hpp). A 1 x 1 conv of stride 2 reaches a quarter of x: one
// sampled block of 64 filter tiles' grid (each pixel tile's x read by 64
// blocks) scales past it, and the cap holds it there; with stride 1 the
// same conv's footprint is x's.
TEST_F(KernelMemory, AStridedConvsInputFootprintIsThePartItsWindowsReach) {
  const auto x_footprint = [](const OpDescriptor& d) {
    auto counters = count_variant_memory(d, "tc128x64", 1);
    EXPECT_TRUE(counters.is_ok()) << counters.status().message();
    for (const KernelMemoryCounters& k : counters.value())
      for (const emulator::BufferFootprint& f : k.footprint)
        if (f.name == "x") return std::pair{f.sectors, static_cast<double>(f.buffer_sectors)};
    ADD_FAILURE() << "no footprint of x";
    return std::pair{0.0, 0.0};
  };
  const auto [sectors, buffer] = x_footprint(pointwise_fwd(2, 64, 512, {32, 32}, {2, 2}));
  EXPECT_EQ(sectors, buffer / 4);
  const auto [all, unit_buffer] = x_footprint(pointwise_fwd(2, 64, 512, {32, 32}));
  EXPECT_EQ(all, unit_buffer);
}

// A cluster that shares its pixel tile (wgmma128x64pa) reads each stage's
// im2col box of x from the L2 once for its four blocks, where the same
// tile without clusters (wgmma128x64p) reads it once a block: a 1 x 1 conv
// of 512 filters (8 filter tiles of 64) over 4 pixel tiles, a tile a
// block, takes a quarter of the sectors of x; w's are the same.
TEST_F(KernelMemory, APixelClusterReadsEachPixelTilesBoxOnceForItsBlocks) {
  const OpDescriptor d = pointwise_fwd(2, 64, 512, {16, 16});
  const auto bulk_loads = [&](const std::string& variant, const std::string& object) {
    double sectors = 0;
    for (const KernelMemoryCounters& k : counted(d, variant))
      for (const SiteCounters& s : k.sites)
        if (s.site.op == MemoryOp::bulk_load && s.object == object) sectors += s.cost;
    return sectors;
  };
  const double x = bulk_loads("wgmma128x64p", "x"), w = bulk_loads("wgmma128x64p", "w");
  ASSERT_GT(x, 0);
  EXPECT_DOUBLE_EQ(bulk_loads("wgmma128x64pa", "x"), x / 4);
  EXPECT_DOUBLE_EQ(bulk_loads("wgmma128x64pa", "w"), w);
}

}  // namespace
}  // namespace convjit
