// The emulator's memory counters (memory_counters.hpp, access_recorder.hpp)
// on access patterns whose cost is worked out by hand: the bank and sector
// arithmetic on lane addresses, and whole test kernels
// (tests/emulator_templates/memory_patterns.cuh) run through the recorder.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "dispatcher/backends/emulator/kernel_emulator.hpp"
#include "dispatcher/backends/emulator/memory_counters.hpp"
#include "support/test_templates.hpp"
#include "support/tma_cases.hpp"
#include "support/wgmma_cases.hpp"

namespace convjit::emulator {
namespace {

constexpr long long kBlock = test::kWarpBlock;
constexpr long long kWarpsPerBlock = kBlock / 32;

std::vector<LaneAccess> lanes_at(std::int64_t stride, unsigned lanes = 32, std::int64_t first = 0) {
  std::vector<LaneAccess> v;
  for (unsigned l = 0; l < lanes; ++l) v.push_back({l, first + stride * l});
  return v;
}

AccessSite shared_site(MemoryOp op, unsigned bytes, unsigned shape = 0) {
  return {MemorySpace::shared, op, static_cast<std::uint16_t>(bytes),
          static_cast<std::uint8_t>(shape), 0};
}
AccessSite global_site(unsigned bytes) {
  return {MemorySpace::global, MemoryOp::load, static_cast<std::uint16_t>(bytes), 0, 0};
}

void expect_cost(MemoryCost cost, unsigned actual, unsigned ideal) {
  EXPECT_EQ(cost.actual, actual);
  EXPECT_EQ(cost.ideal, ideal);
}

// ---- lane-address arithmetic ------------------------------------------------------

TEST(SharedWavefronts, FourByteWordsInABankAreServedOnePerWavefront) {
  const AccessSite lds = shared_site(MemoryOp::load, 4);
  expect_cost(shared_wavefronts(lds, lanes_at(4)), 1, 1);     // consecutive words
  expect_cost(shared_wavefronts(lds, lanes_at(8)), 2, 1);     // 2-way
  expect_cost(shared_wavefronts(lds, lanes_at(128)), 32, 1);  // one bank
  expect_cost(shared_wavefronts(lds, lanes_at(0)), 1, 1);     // a broadcast
  expect_cost(shared_wavefronts(lds, lanes_at(4 * 33)), 1, 1);  // padded rows
  // 16-bit values: two lanes share a word, which is read once.
  expect_cost(shared_wavefronts(shared_site(MemoryOp::load, 2), lanes_at(2)), 1, 1);
}

TEST(SharedWavefronts, WideAccessesAreServedInHalfAndQuarterWarps) {
  expect_cost(shared_wavefronts(shared_site(MemoryOp::load, 8), lanes_at(8)), 2, 2);
  expect_cost(shared_wavefronts(shared_site(MemoryOp::store, 16), lanes_at(16)), 4, 4);
  // 16-byte accesses 256 bytes apart: every lane in banks 0-3, 8 wavefronts a quarter warp.
  expect_cost(shared_wavefronts(shared_site(MemoryOp::store, 16), lanes_at(256)), 32, 4);
  // Only the phases with lanes in them count: here one quarter warp.
  expect_cost(shared_wavefronts(shared_site(MemoryOp::async_copy, 16), lanes_at(16, 8)), 1, 1);
}

TEST(SharedWavefronts, LdmatrixServesEachMatrixsEightRowsTogether) {
  const AccessSite x4 = shared_site(MemoryOp::ldmatrix, 16, 4);
  expect_cost(shared_wavefronts(x4, lanes_at(128)), 32, 4);  // rows of 128 B, unswizzled
  std::vector<LaneAccess> swizzled;
  for (unsigned l = 0; l < 32; ++l) swizzled.push_back({l, 128 * l + 16 * (l % 8)});
  expect_cost(shared_wavefronts(x4, swizzled), 4, 4);
  expect_cost(shared_wavefronts(x4, lanes_at(16)), 4, 4);  // rows packed back to back
  // x1, rows 64 bytes apart: rows 0, 2, 4 and 6 share banks 0-3.
  expect_cost(shared_wavefronts(shared_site(MemoryOp::ldmatrix, 16, 1), lanes_at(64, 8)), 4, 1);
}

TEST(GlobalSectors, CountDistinctSectorsAgainstThePackedIdeal) {
  expect_cost(global_sectors(global_site(4), lanes_at(4)), 4, 4);
  expect_cost(global_sectors(global_site(4), lanes_at(8)), 8, 4);
  expect_cost(global_sectors(global_site(4), lanes_at(32)), 32, 4);
  expect_cost(global_sectors(global_site(16), lanes_at(16)), 16, 16);
  expect_cost(global_sectors(global_site(4), lanes_at(0)), 1, 1);            // one address
  expect_cost(global_sectors(global_site(4), lanes_at(4, 32, 16)), 5, 4);    // misaligned
  expect_cost(global_sectors(global_site(2), lanes_at(2, 32, 60)), 3, 2);    // 64 B from 60
  expect_cost(global_sectors(global_site(16), lanes_at(-16, 4, 48)), 2, 2);  // descending
}

// ---- whole kernels through the recorder ----------------------------------------------

const SiteCounters& site(const KernelMemoryCounters& k, MemorySpace space, MemoryOp op) {
  for (const SiteCounters& s : k.sites)
    if (s.site.space == space && s.site.op == op) return s;
  ADD_FAILURE() << "no " << memory_op_name(space, op) << " counted";
  static const SiteCounters none;
  return none;
}

KernelMemoryCounters count(long long mode, long long blocks, unsigned sampled,
                           std::size_t input_per_thread) {
  const long long threads = blocks * kBlock;
  const std::vector<float> in = test::iota_from(input_per_thread * threads, 0.0f);
  auto counted = test::count_emulated("memory_patterns.cuh", mode, in, 4 * threads, threads,
                                      sampled);
  EXPECT_TRUE(counted.is_ok()) << counted.status().message();
  if (!counted.is_ok() || counted.value().size() != 1) return {};
  return counted.value()[0];
}

TEST(MemoryCounters, ACoalescedSixteenByteCopyMovesOnlyWholeSectors) {
  const KernelMemoryCounters k = count(0, 2, 8, 4);
  const SiteCounters& load = site(k, MemorySpace::global, MemoryOp::load);
  EXPECT_EQ(load.object, "x");
  EXPECT_EQ(load.instructions, 2 * kWarpsPerBlock);
  EXPECT_EQ(load.cost, 16 * 2 * kWarpsPerBlock);
  EXPECT_EQ(load.ideal, load.cost);
  const SiteCounters& store = site(k, MemorySpace::global, MemoryOp::store);
  EXPECT_EQ(store.cost, store.ideal);
  EXPECT_EQ(k.worst(), nullptr);
  // Each buffer's every sector, once.
  ASSERT_EQ(k.footprint.size(), 2u);
  for (const BufferFootprint& f : k.footprint) EXPECT_EQ(f.sectors, 2 * kBlock * 16 / 32) << f.name;
}

TEST(MemoryCounters, AVectorLoadSplitIntoWordsShowsUpAsFourTimesTheSectors) {
  const KernelMemoryCounters k = count(5, 2, 8, 4);
  const SiteCounters& load = site(k, MemorySpace::global, MemoryOp::load);
  EXPECT_EQ(load.site.bytes, 4);
  EXPECT_EQ(load.instructions, 4 * 2 * kWarpsPerBlock);  // four requests where one did
  EXPECT_EQ(load.cost, 16 * load.instructions);
  EXPECT_EQ(load.cost, 4 * load.ideal);
  ASSERT_NE(k.worst(), nullptr);
  EXPECT_EQ(k.worst()->site.op, MemoryOp::load);
}

TEST(MemoryCounters, AStrideTwoLoadTakesTwiceItsSectorsAndAStrideEightEightTimes) {
  for (const auto& [mode, stride] : {std::pair{1LL, 2.0}, std::pair{2LL, 8.0}}) {
    const KernelMemoryCounters k = count(mode, 2, 8, static_cast<std::size_t>(stride));
    const SiteCounters& load = site(k, MemorySpace::global, MemoryOp::load);
    EXPECT_EQ(load.instructions, 2 * kWarpsPerBlock);
    EXPECT_EQ(load.ideal, 4 * 2 * kWarpsPerBlock);
    EXPECT_EQ(load.cost, stride * load.ideal) << "stride " << stride;
    const SiteCounters& store = site(k, MemorySpace::global, MemoryOp::store);
    EXPECT_EQ(store.cost, store.ideal);
    ASSERT_NE(k.worst(), nullptr);
    EXPECT_EQ(k.worst()->site.op, MemoryOp::load);
    // Every sector of x holds a loaded element: the whole of it is compulsory.
    EXPECT_EQ(k.footprint[0].name, "x");
    EXPECT_EQ(k.footprint[0].sectors, stride * 2 * kBlock * 4 / 32);
  }
}

TEST(MemoryCounters, ASwizzledLdmatrixIsConflictFreeAndWithoutItsSwizzleEightWay) {
  const KernelMemoryCounters swizzled = count(3, 1, 8, 1);
  const SiteCounters& ldsm = site(swizzled, MemorySpace::shared, MemoryOp::ldmatrix);
  EXPECT_EQ(ldsm.object.rfind("shared tile (line ", 0), 0u) << ldsm.object;
  EXPECT_EQ(ldsm.instructions, kWarpsPerBlock);
  EXPECT_EQ(ldsm.cost, 4 * kWarpsPerBlock);
  EXPECT_EQ(ldsm.ideal, ldsm.cost);

  const KernelMemoryCounters plain = count(4, 1, 8, 1);
  const SiteCounters& conflicted = site(plain, MemorySpace::shared, MemoryOp::ldmatrix);
  EXPECT_EQ(conflicted.cost, 8 * conflicted.ideal);
  // The staging stores (2-byte values, 128 bytes apart per lane) are the
  // same in both: all 32 lanes in one bank.
  const SiteCounters& sts = site(plain, MemorySpace::shared, MemoryOp::store);
  EXPECT_EQ(sts.instructions, 64 * kWarpsPerBlock);
  EXPECT_EQ(sts.cost, 32 * sts.instructions);
}

TEST(MemoryCounters, SampledBlocksAreScaledToTheGrid) {
  EXPECT_EQ(sampled_blocks(10, 3), (std::vector<unsigned>{0, 5, 9}));
  EXPECT_EQ(sampled_blocks(3, 5), (std::vector<unsigned>{0, 1, 2}));
  EXPECT_EQ(sampled_blocks(100, 1), (std::vector<unsigned>{0}));
  const KernelMemoryCounters k = count(1, 10, 3, 2);
  EXPECT_EQ(k.blocks, 10u);
  EXPECT_EQ(k.sampled_blocks, 3u);
  const SiteCounters& load = site(k, MemorySpace::global, MemoryOp::load);
  EXPECT_DOUBLE_EQ(load.instructions, 10 * kWarpsPerBlock);
  EXPECT_DOUBLE_EQ(load.cost, 8 * 10 * kWarpsPerBlock);
}

// A persistent grid's blocks take its tiles in turn: of 140 tiles on 132
// blocks, blocks 0-7 take 2 and the rest 1.  The sampled blocks' counts
// scale by the tiles over those they took (block 0 alone: 140 / 2, not
// 132 / 1); a plain grid's and a Stream-K grid's by the blocks.
TEST(MemoryCounters, APersistentGridsSampledBlocksScaleByTheTilesTheyTook) {
  KernelEntry persistent;
  persistent.tiles = 132;
  persistent.persistent_tiles = 140;
  const auto scale = [](const KernelEntry& e, std::vector<unsigned> ran) {
    return grid_scale(e, ran);
  };
  EXPECT_DOUBLE_EQ(scale(persistent, {0}), 70.0);
  EXPECT_DOUBLE_EQ(scale(persistent, {131}), 140.0);
  EXPECT_DOUBLE_EQ(scale(persistent, {0, 66, 131}), 140.0 / 4);
  EXPECT_DOUBLE_EQ(scale(persistent, {0, 1, 2, 3}), 140.0 / 8) << "a cluster of four";
  KernelEntry stream_k = persistent;
  stream_k.persistent_units = 140 * 8;
  EXPECT_DOUBLE_EQ(scale(stream_k, {0}), 132.0);
  KernelEntry plain;
  plain.tiles = 10;
  EXPECT_DOUBLE_EQ(scale(plain, {0, 5, 9}), 10.0 / 3);
}

// A TMA copy is one request of the copy engine's, costing the sectors of
// its box inside the tensor: tma.cuh mode 16 copies a box of 128 floats of
// an 800-float tensor at 0, -64 and 736, 512 + 256 + 256 bytes in whole
// sectors: 16 + 8 + 8, of which the second's are the first's, so x's
// footprint is 24.
TEST(MemoryCounters, ATmaCopyCostsTheSectorsOfItsBoxInsideTheTensor) {
  test::TmaCase k = test::tma_case(16);
  test::EmulatedRunOptions options;
  options.tensor_maps = k.maps;
  auto counted =
      test::count_emulated("tma.cuh", 16, k.input, k.output_size, k.threads, 3, options);
  ASSERT_TRUE(counted.is_ok()) << counted.status().message();
  const KernelMemoryCounters& c = counted.value().at(0);
  const SiteCounters& tma = site(c, MemorySpace::global, MemoryOp::bulk_load);
  EXPECT_EQ(tma.instructions, 3);
  EXPECT_EQ(tma.cost, 32);
  EXPECT_EQ(tma.ideal, 32);
  const auto x = std::find_if(c.footprint.begin(), c.footprint.end(),
                              [](const BufferFootprint& f) { return f.name == "x"; });
  ASSERT_NE(x, c.footprint.end());
  EXPECT_EQ(x->sectors, 24);
}

// A warpgroup's wgmma m64nNk16 does the work of N/2 m16n8k16 mma.syncs:
// wgmma.cuh mode 1 runs four m64n64k16 in each of two warpgroups.
TEST(MemoryCounters, AWgmmaCountsAsTheMmaSyncsOfItsFlops) {
  const test::WgmmaCase w = test::wgmma_case(1);
  auto counted = test::count_emulated("wgmma.cuh", 1, w.input, w.output_size, kBlock, 1);
  ASSERT_TRUE(counted.is_ok()) << counted.status().message();
  EXPECT_EQ(counted.value().at(0).wgmma_mma_equivalents, 2 * 4 * 64 / 2);
  EXPECT_EQ(counted.value().at(0).mma_instructions, 0);
}

}  // namespace
}  // namespace convjit::emulator
