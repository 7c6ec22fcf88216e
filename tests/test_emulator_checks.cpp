// The emulator's own guarantees, on test-only templates with planted bugs
// (tests/emulator_templates): out-of-bounds and read-only accesses, reads
// of strided-layout gaps, unwritten outputs, write races, uninitialised
// workspace, missing and divergent barriers and shared-memory overruns are
// each reported with the kernel, the thread and the element; and barriers,
// shared memory and atomics behave as on a GPU.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "dispatcher/backends/emulator/emulated_template.hpp"
#include "dispatcher/backends/emulator/kernel_emulator.hpp"
#include "dispatcher/backends/emulator/violation_log.hpp"
#include "support/test_templates.hpp"

namespace convjit::emulator {

namespace {

using ::testing::HasSubstr;

constexpr long long kJitBlock = kJitThreadsPerBlock;

struct PlantedRun {
  std::vector<float> input, output;
  Status status;
};

// Runs a test template over `n` f32 elements (plus `workspace` floats) in
// `mode`; the output starts at -1 everywhere.
PlantedRun run_planted(const char* template_name, long long n, long long mode,
                       long long output_size, std::vector<std::uint8_t> input_elements = {},
                       std::size_t workspace = 0) {
  PlantedRun run;
  run.input = test::iota_from(static_cast<std::size_t>(n), 1.0f);
  test::TemplateRun emulated =
      test::run_emulated(template_name, mode, run.input, static_cast<std::size_t>(output_size), n,
                         {std::move(input_elements), workspace, -1.0f});
  run.output = std::move(emulated.output);
  run.status = emulated.status;
  return run;
}

void expect_violation(const PlantedRun& run, const std::string& what) {
  EXPECT_EQ(run.status.code(), CONVJIT_STATUS_EXECUTION_FAILED) << run.status.message();
  EXPECT_THAT(run.status.message(), HasSubstr(what));
  for (float v : run.output) ASSERT_EQ(v, -1.0f) << "a failed launch must leave the output alone";
}

// Blocks run in any order; the report keeps the lowest threads' messages.
TEST(EmulatorChecks, TheReportKeepsTheLowestThreadsWhateverTheArrivalOrder) {
  ViolationLog log;
  for (long long thread = 99; thread >= 0; --thread)
    log.report("thread " + std::to_string(thread), thread);
  log.report("an unwritten output");
  EXPECT_EQ(log.count(), 101u);
  const auto kept = log.messages();
  ASSERT_EQ(kept.size(), ViolationLog::kKeptMessages);
  for (std::size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(kept[i], "thread " + std::to_string(i));
  EXPECT_THAT(log.summary(), ::testing::EndsWith("thread 7; and 93 more"));
}

TEST(EmulatorChecks, ACorrectCopyIsClean) {
  const PlantedRun run = run_planted("planted_memory_bugs.cuh", 1000, 0, 1000);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  EXPECT_EQ(run.output, run.input);
}

TEST(EmulatorChecks, AReadPastTheEndNamesTheKernelThreadAndElement) {
  const PlantedRun run = run_planted("planted_memory_bugs.cuh", 1000, 1, 1000);
  expect_violation(run, "planted_memory_bugs.cuh (f32) convjit_kernel: block 3 thread 231");
  EXPECT_THAT(run.status.message(), HasSubstr("reads x[1000], past its last (its elements are "
                                              "x[0..999])"));
}

TEST(EmulatorChecks, AReadBeforeTheStartIsCaught) {
  expect_violation(run_planted("planted_memory_bugs.cuh", 300, 2, 300),
                   "block 0 thread 0 (global thread 0) reads x[-1], before its first element");
}

TEST(EmulatorChecks, AWriteToAnInputIsCaught) {
  expect_violation(run_planted("planted_memory_bugs.cuh", 300, 3, 300), "writes x[0], an input");
}

TEST(EmulatorChecks, UnwrittenOutputElementsAreCounted) {
  expect_violation(run_planted("planted_memory_bugs.cuh", 300, 4, 300),
                   "no thread wrote y[1] and 149 more of its elements");
}

TEST(EmulatorChecks, TwoThreadsWritingOneElementIsARace) {
  expect_violation(run_planted("planted_memory_bugs.cuh", 300, 5, 300),
                   "also wrote in the same kernel: a race");
}

TEST(EmulatorChecks, WorkspaceReadBeforeAnyWriteIsCaught) {
  expect_violation(run_planted("planted_memory_bugs.cuh", 300, 6, 300, {}, 300),
                   "reads workspace[0] before any thread wrote it");
}

TEST(EmulatorChecks, AWritePastTheEndIsCaughtAndNothingLeaks) {
  expect_violation(run_planted("planted_memory_bugs.cuh", 300, 7, 300),
                   "writes y[300], past its last");
}

TEST(EmulatorChecks, AReadOfAStridedLayoutGapIsCaught) {
  std::vector<std::uint8_t> every_other(kJitBlock);  // one block: threads report in order
  for (std::size_t i = 0; i < every_other.size(); i += 2) every_other[i] = 1;
  expect_violation(run_planted("planted_memory_bugs.cuh", kJitBlock, 0, kJitBlock, every_other),
                   "reads x[1], a gap between elements of its strided layout");
}

TEST(EmulatorChecks, ABlockReductionWithBarriersIsCleanAndCorrect) {
  const long long blocks = 5;
  const PlantedRun run = run_planted("planted_barrier_bugs.cuh", blocks * kJitBlock, 0, blocks);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (long long b = 0; b < blocks; ++b) {
    // Elements b*256+1 .. (b+1)*256: exact in f32.
    const double first = static_cast<double>(b * kJitBlock + 1), last = first + kJitBlock - 1;
    EXPECT_EQ(run.output[static_cast<std::size_t>(b)], (first + last) * kJitBlock / 2) << b;
  }
}

TEST(EmulatorChecks, AMissingBarrierIsReportedAsASharedMemoryRace) {
  const PlantedRun run = run_planted("planted_barrier_bugs.cuh", kJitBlock, 1, 1);
  expect_violation(run, "planted_barrier_bugs.cuh (f32) convjit_kernel: block 0");
  EXPECT_THAT(run.status.message(), HasSubstr("shared partial["));
  EXPECT_THAT(run.status.message(), HasSubstr("a race; a __syncthreads() is missing"));
}

TEST(EmulatorChecks, ABarrierNotEveryThreadReachesIsReported) {
  expect_violation(run_planted("planted_barrier_bugs.cuh", kJitBlock, 2, 1),
                   "__syncthreads() divergence in barrier interval 1: 128 of 256 threads wait at "
                   "line");
}

TEST(EmulatorChecks, ASharedArrayOverrunIsCaught) {
  expect_violation(run_planted("planted_barrier_bugs.cuh", kJitBlock, 3, 1),
                   "indexes shared partial[256]");
}

TEST(EmulatorChecks, GlobalAndSharedAtomicsAddUpAcrossParallelBlocks) {
  const long long n = 20 * kJitBlock + 17;  // a partial last block; n(n+1)/2 < 2^24
  const PlantedRun run = run_planted("atomic_sum.cuh", n, 0, 2);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  // Every partial sum is an integer below 2^24, so f32 adds exactly in any order.
  const double sum = static_cast<double>(n) * static_cast<double>(n + 1) / 2;
  EXPECT_EQ(run.output[0], sum);
  EXPECT_EQ(run.output[1], sum);
}

TEST(EmulatorChecks, AnUnknownProblemMemberIsAnInternalError) {
  KernelSource source;
  source.template_name = "planted_memory_bugs.cuh";
  source.constants = {{"NOT_A_MEMBER", 1}};
  EmulatedLaunch launch;
  launch.kernels =
      find_emulated_template(test_emulated_templates(), source.template_name, DataType::f32);
  launch.source = &source;
  const Status s = emulate(launch);
  EXPECT_EQ(s.code(), CONVJIT_STATUS_INTERNAL_ERROR);
  EXPECT_THAT(s.message(), HasSubstr("Problem::NOT_A_MEMBER"));
}

}  // namespace
}  // namespace convjit::emulator
