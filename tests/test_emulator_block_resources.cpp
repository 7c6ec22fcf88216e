// The emulator's block resources on sm_90: dynamic shared memory beyond
// 48 KiB (CONVJIT_DYNAMIC_SHARED_ARRAY, KernelEntry::dynamic_shared_bytes)
// with the 48 KiB static and 227 KiB total limits, and setmaxnreg
// (common/warpgroup.cuh) with the ISA's rules
// (tests/emulator_templates/block_resources.cuh).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_templates.hpp"

namespace convjit::emulator {
namespace {

using ::testing::HasSubstr;

constexpr long long kThreads = 2 * test::kWarpBlock;
constexpr std::size_t kStageBytes = 200 * 1024;

test::TemplateRun run_resources(long long mode, std::size_t dynamic_bytes = kStageBytes) {
  test::EmulatedRunOptions options;
  options.dynamic_shared_bytes = dynamic_bytes;
  return test::run_emulated("block_resources.cuh", mode, test::iota_from(kThreads, 1.0f), kThreads,
                            kThreads, std::move(options));
}

TEST(EmulatorBlockResources, TwoHundredKiBOfDynamicSharedMemoryAndMovedRegistersRun) {
  const test::TemplateRun run = run_resources(0);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (long long i = 0; i < kThreads; ++i) {
    const long long block = i - i % test::kWarpBlock;
    const float neighbour = static_cast<float>(block + (i + 1) % test::kWarpBlock + 1);
    float sum = 0.0f;  // the template's order
    for (int k = 0; k < 200; ++k) sum += neighbour + static_cast<float>(k);
    ASSERT_EQ(run.output[static_cast<std::size_t>(i)], sum) << "thread " << i;
  }
}

using test::expect_reported;

TEST(EmulatorBlockResources, SharedMemoryLimitsAreChecked) {
  expect_reported(run_resources(1), "indexes shared stage[51200]");
  expect_reported(run_resources(1), "outside its 51200 elements");
  expect_reported(run_resources(2),
                  "declares static shared arrays of 49156 bytes with big, beyond the 49152 that "
                  "ptxas allows");
  // No dynamic memory for the dynamic array, and more than 227 KiB.
  expect_reported(run_resources(0, 0), "but the launch gives 0 bytes of dynamic shared memory");
  const test::TemplateRun beyond = run_resources(0, 228 * 1024);
  EXPECT_EQ(beyond.status.code(), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(beyond.status.message(),
              HasSubstr("launches with 233472 bytes of dynamic shared memory, beyond the 232448"));
}

TEST(EmulatorBlockResources, SetmaxnregRulesAreChecked) {
  expect_reported(run_resources(3),
                  "warp 5's warpgroup instruction 1 is setmaxnreg.inc 240, warp 4's "
                  "setmaxnreg.inc 232: every warp of a warpgroup runs the same ones");
  expect_reported(run_resources(4),
                  "setmaxnreg.inc.sync.aligned.u32 200 in warp 4, which holds 232 registers: "
                  ".inc must not lower the count");
  expect_reported(run_resources(5),
                  "setmaxnreg.inc.sync.aligned.u32 224 while lane 0 of its warp asks for 232");
}

}  // namespace
}  // namespace convjit::emulator
