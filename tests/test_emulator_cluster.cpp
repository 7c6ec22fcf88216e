// The emulator's clusters (common/cluster.cuh): a cluster's blocks run
// together, sharing a multicast TMA load and releasing it by arrivals on
// another block's mbarrier (tests/emulator_templates/cluster.cuh), in
// clusters of 1, 2 and 4; each planted bug reported with a clear message;
// a grid that is not whole clusters refused, and blocks of part warps as
// not emulated; and the memory counters sampling whole clusters.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_templates.hpp"
#include "support/tma_cases.hpp"

namespace convjit::emulator {
namespace {

using test::expect_reported;
using test::kWarpBlock;

// Rows of 32 floats, 16 for each cluster's two boxes of 8 (at most one
// cluster a block), numbered from 1.
constexpr long long kRowsPerBlock = 16;

test::EmulatedRunOptions cluster_options(long long blocks, unsigned cluster) {
  test::EmulatedRunOptions options;
  const auto rows = static_cast<std::uint64_t>(kRowsPerBlock * blocks);
  options.tensor_maps = {test::tma_over_input(test::tma_tiled({32, rows}, {32, 8}))};
  options.cluster_blocks = cluster;
  return options;
}

std::vector<float> cluster_rows(long long blocks) {
  return test::iota_from(static_cast<std::size_t>(32 * kRowsPerBlock * blocks), 1.0f);
}

test::TemplateRun run_cluster_mode(long long mode, long long blocks = 4, unsigned cluster = 2) {
  return test::run_emulated("cluster.cuh", mode, cluster_rows(blocks),
                            static_cast<std::size_t>(2 * blocks * kWarpBlock), blocks * kWarpBlock,
                            cluster_options(blocks, cluster));
}

TEST(EmulatorCluster, BlocksShareAMulticastLoadAndReleaseItByRemoteArrivals) {
  constexpr long long kBlocks = 4;
  for (unsigned cluster : {1u, 2u, 4u}) {
    SCOPED_TRACE(fmt::format("clusters of {}", cluster));
    const test::TemplateRun run = run_cluster_mode(0, kBlocks, cluster);
    ASSERT_TRUE(run.status.is_ok()) << run.status.message();
    for (long long b = 0; b < kBlocks; ++b)
      for (long long round = 0; round < 2; ++round)
        for (long long t = 0; t < kWarpBlock; ++t) {
          const long long c = b / cluster, rank = b % cluster;
          const long long row = 16 * c + 8 * round + t / 32;
          const auto expected =
              static_cast<float>(32 * row + t % 32 + 1 + 1000 * rank + 100 * cluster);
          ASSERT_EQ(run.output[static_cast<std::size_t>(kWarpBlock * (2 * b + round) + t)],
                    expected)
              << "block " << b << ", round " << round << ", thread " << t;
        }
  }
}

TEST(EmulatorCluster, ARemoteAccessBeforeTheInitsArePublishedIsReported) {
  expect_reported(
      run_cluster_mode(1),
      "maps shared box to block 1 of the cluster before that block declared it: a "
      "barrier.cluster between the declarations and the first remote access is missing");
  expect_reported(run_cluster_mode(2),
                  "completes a multicast TMA load on mbarrier bars[0] of block 1 of the cluster "
                  "before a barrier.cluster made its init visible to the cluster");
}

TEST(EmulatorCluster, ABlockReturningBeforeTheOthersAreDoneWithItIsReported) {
  expect_reported(run_cluster_mode(3),
                  "block 0 of the cluster returns while thread 0 of block 1's arrival on mbarrier "
                  "bars[1] is not ordered before it (nor 255 more remote accesses)");
  expect_reported(run_cluster_mode(7),
                  "barrier.cluster divergence: 256 of the cluster's 512 threads wait at it, 256 "
                  "have returned");
  // A read of another block's shared memory (ld.shared::cluster) after the
  // last barrier.cluster: that block may return first.
  expect_reported(run_cluster_mode(8),
                  "block 1 thread 0 (global thread 256) reads shared box of block 0 of the "
                  "cluster, which has returned: a block must not return while others may still "
                  "reach its shared memory");
}

TEST(EmulatorCluster, AMulticastOverAStageStillReadIsReported) {
  // Block 0's reload lands in block 1's box, which block 0 does not know
  // block 1 has read (nor that the first load has landed there), and in its
  // own, which its other threads have still to read.
  const test::TemplateRun run = run_cluster_mode(4);
  expect_reported(run,
                  "block 0 thread 0 (global thread 0) writes shared box[0] of block 1 that was "
                  "written by a TMA load completing on mbarrier bars[0] of block 1 in the same "
                  "barrier interval (2): a race");
}

TEST(EmulatorCluster, RanksPastTheClusterAreReported) {
  expect_reported(run_cluster_mode(5),
                  "its mask 0x0007 names blocks past the cluster's 2: name ranks below "
                  "%cluster_nctarank");
  expect_reported(run_cluster_mode(6),
                  "maps shared bars to block 2 of the cluster, which has 2 blocks: mapa's rank "
                  "must be below %cluster_nctarank");
}

TEST(EmulatorCluster, AGridOfPartClustersIsRefused) {
  const test::TemplateRun run = run_cluster_mode(0, 3, 2);
  EXPECT_EQ(run.status.code(), CONVJIT_STATUS_INVALID_ARGUMENT) << run.status.message();
  EXPECT_THAT(run.status.message(),
              ::testing::HasSubstr("launches 3 blocks in clusters of 2: the grid must be whole "
                                   "clusters"));
}

// The GPU runs clusters of blocks of any size; the emulator numbers a
// cluster's threads by warps, and says so.
TEST(EmulatorCluster, BlocksOfPartWarpsAreRefusedAsNotEmulated) {
  test::EmulatedRunOptions options = cluster_options(4, 2);
  options.threads_per_block = 48;
  const test::TemplateRun run =
      test::run_emulated("cluster.cuh", 0, cluster_rows(4), 1024, 4 * 48, std::move(options));
  EXPECT_EQ(run.status.code(), CONVJIT_STATUS_UNSUPPORTED) << run.status.message();
  EXPECT_THAT(run.status.message(),
              ::testing::HasSubstr("launches clusters of blocks of 48 threads: the emulator runs "
                                   "clusters of whole warps only"));
}

TEST(EmulatorCluster, TheMemoryCountersSampleWholeClusters) {
  constexpr long long kBlocks = 8;
  auto counted = test::count_emulated("cluster.cuh", 0, cluster_rows(kBlocks),
                                      static_cast<std::size_t>(2 * kBlocks * kWarpBlock),
                                      kBlocks * kWarpBlock, 2, cluster_options(kBlocks, 2));
  ASSERT_TRUE(counted.is_ok()) << counted.status().message();
  ASSERT_EQ(counted.value().size(), 1u);
  EXPECT_EQ(counted.value()[0].blocks, 8u);
  EXPECT_EQ(counted.value()[0].sampled_blocks, 4u);  // the first and the last cluster
}

}  // namespace
}  // namespace convjit::emulator
