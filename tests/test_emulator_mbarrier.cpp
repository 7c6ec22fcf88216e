// The emulator's mbarriers (common/mbarrier.cuh): the state machine against
// the PTX ISA's rules, worked by hand (phases, pending arrivals, the
// transaction count and its range, parity waits, inval); a test template
// that passes data between threads through phases alone, whose results
// are checked and which the race checker must accept; and each planted
// bug reported with a clear message (tests/emulator_templates/mbarrier.cuh).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dispatcher/backends/emulator/block_scheduler.hpp"
#include "dispatcher/backends/emulator/launch_context.hpp"
#include "dispatcher/backends/emulator/mbarrier_table.hpp"
#include "support/test_templates.hpp"

namespace convjit::emulator {
namespace {

using ::testing::HasSubstr;

using test::kWarpBlock;

// The table alone: one barrier and its phases, as the ISA defines them.
// Violations go to the launch's log, which a table used outside a launch
// has not; these cases only take defined paths.
TEST(EmulatorMbarrierTable, PhasesCompleteOnArrivalsAndTransactionBytes) {
  BlockScheduler block;  // the region's owner; no block runs
  SharedRegion region(block, 0, "bars", 1, 2, 8);
  const MbarrierKey bar{&region, 0};
  MbarrierTable table;
  ASSERT_TRUE(table.init(bar, 2));
  bool valid = false;
  EXPECT_FALSE(table.phase_complete(bar, 0, valid));
  EXPECT_TRUE(valid);
  EXPECT_TRUE(table.phase_complete(bar, 1, valid));  // the "preceding" phase of the first
  EXPECT_TRUE(table.expect_tx(bar, 64));
  EXPECT_EQ(table.arrive(bar, 1, {}), 0u);
  EXPECT_EQ(table.arrive(bar, 1, {}), 0u);
  EXPECT_FALSE(table.phase_complete(bar, 0, valid));  // 64 bytes still expected
  EXPECT_EQ(table.describe(bar),
            "bars[0]: phase 0, 0 of 2 arrivals and 64 transaction bytes missing");
  EXPECT_TRUE(table.complete_tx(bar, 40));
  EXPECT_TRUE(table.complete_tx(bar, 24));
  EXPECT_TRUE(table.phase_complete(bar, 0, valid));
  EXPECT_FALSE(table.phase_complete(bar, 1, valid));  // phase 1 runs now
  // Bytes may complete before they are expected: the count goes negative.
  EXPECT_TRUE(table.complete_tx(bar, 16));
  EXPECT_EQ(table.arrive(bar, 2, {}), 1u);
  EXPECT_FALSE(table.phase_complete(bar, 1, valid));
  EXPECT_TRUE(table.expect_tx(bar, 16));  // matches the early bytes: the count is back at zero
  EXPECT_TRUE(table.phase_complete(bar, 1, valid));
  EXPECT_EQ(table.arrive(bar, 1, {}), 2u);  // phase 2's first arrival
  EXPECT_TRUE(table.inval(bar));
  EXPECT_FALSE(table.live(bar));
}

TEST(EmulatorMbarrierTable, ReleasedKnowledgeIsTheJoinOfThePhasesArrivals) {
  BlockScheduler block;
  SharedRegion region(block, 0, "bars", 1, 1, 8);
  const MbarrierKey bar{&region, 0};
  MbarrierTable table;
  ASSERT_TRUE(table.init(bar, 2));
  (void)table.arrive(bar, 1, {3, 0, 1});
  EXPECT_TRUE(table.released(bar).empty());  // the phase has not completed
  (void)table.arrive(bar, 1, {1, 5});
  EXPECT_EQ(table.released(bar), (OrderClock{3, 5, 1}));
}

using test::expect_reported;

test::TemplateRun run_mode(long long mode, long long threads = kWarpBlock) {
  return test::run_emulated("mbarrier.cuh", mode, test::iota_from(threads, 1.0f), 3 * threads,
                            threads);
}

TEST(EmulatorMbarrier, PhasesPassDataBetweenThreadsWithoutABarrier) {
  constexpr long long kThreads = 2 * kWarpBlock;
  const test::TemplateRun run = run_mode(0, kThreads);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (long long i = 0; i < kThreads; ++i) {
    const long long first = i - i % kWarpBlock, t = i % kWarpBlock;
    const auto in = [&](long long shift) {
      return static_cast<float>(first + (t + shift) % kWarpBlock + 1);
    };
    ASSERT_EQ(run.output[static_cast<std::size_t>(3 * i)], in(1)) << "stage A, thread " << i;
    ASSERT_EQ(run.output[static_cast<std::size_t>(3 * i + 1)], 2.0f * in(2)) << "stage B, " << i;
    ASSERT_EQ(run.output[static_cast<std::size_t>(3 * i + 2)], 3.0f * in(3)) << "stage C, " << i;
  }
}

TEST(EmulatorMbarrier, AMissingArrivalOrTransactionIsADeadlockNamingTheBarrier) {
  expect_reported(run_mode(1),
                  "deadlock: thread 0 waits for parity 0 of mbarrier bars[0]: phase 0, 1 of 256 "
                  "arrivals missing, and 255 more threads wait likewise; no thread can arrive");
  expect_reported(run_mode(2),
                  "waits for parity 0 of mbarrier bars[1]: phase 0, 0 of 256 arrivals and 4 "
                  "transaction bytes missing, and 255 more");
}

// Waiting for parity 0 in phase 1 passes at once (phase 0 is complete):
// thread 0 reads c[3] before thread 3 wrote it, and the last thread, whose
// arrival starts phase 2, waits for that phase forever.
TEST(EmulatorMbarrier, AWaitOnTheWrongPhaseLeavesItsReadsUnorderedAndIsReported) {
  const test::TemplateRun run = run_mode(3);
  expect_reported(run, "writes shared c[3] that was read by thread 0 in the same barrier interval");
  expect_reported(run, "deadlock: thread 255 waits for parity 0 of mbarrier bars[0]: phase 2");
}

// Thread 0's second arrival completes phase 0 of bars[1] before thread
// 255 arrives, so thread 252's read of b[254] is no longer ordered.
TEST(EmulatorMbarrier, AnExtraArrivalCompletesThePhaseEarlyAndTheReadsRace) {
  expect_reported(run_mode(4),
                  "reads shared b[254] after a write by thread 254 in the same barrier "
                  "interval (2): a race");
}

TEST(EmulatorMbarrier, ReuseWithoutInvalAndOutOfRangeCountsAreReported) {
  expect_reported(run_mode(5), "mbarrier.init of shared bars[0], a live mbarrier: mbarrier.inval");
  expect_reported(run_mode(6), "writes shared bars[0], a live mbarrier, with a plain access");
  expect_reported(run_mode(7), "mbarrier.expect_tx of 1048576 bytes on shared bars[1]");
}

}  // namespace
}  // namespace convjit::emulator
