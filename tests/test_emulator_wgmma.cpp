// The emulator's wgmma (common/wgmma.cuh): every mode of
// tests/emulator_templates/wgmma.cuh (f16, bf16 and tf32; shared or
// register A; K- and MN-major operands, unswizzled and swizzled; chained
// accumulation; N from 8 to 256) against the products worked in
// support/wgmma_cases.hpp, and each planted bug reported.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "support/wgmma_cases.hpp"

namespace convjit::emulator {
namespace {

using ::testing::HasSubstr;

test::TemplateRun run_case(const test::WgmmaCase& c) {
  return test::run_emulated("wgmma.cuh", c.mode, c.input, c.output_size, test::kWarpBlock);
}

TEST(EmulatorWgmma, EveryModeComputesTheProductThroughItsLayouts) {
  for (long long mode : test::kWgmmaWorkingModes) {
    const test::WgmmaCase c = test::wgmma_case(mode);
    const test::TemplateRun run = run_case(c);
    ASSERT_TRUE(run.status.is_ok()) << "mode " << mode << ": " << run.status.message();
    for (std::size_t i = 0; i < c.expected.size(); ++i)
      ASSERT_EQ(run.output[i], c.expected[i]) << "mode " << mode << ", element " << i;
  }
}

void expect_wgmma_reported(long long mode, const std::string& what) {
  const test::TemplateRun run = run_case(test::wgmma_case(mode));
  EXPECT_EQ(run.status.code(), CONVJIT_STATUS_EXECUTION_FAILED) << "mode " << mode;
  EXPECT_THAT(run.status.message(), HasSubstr(what)) << "mode " << mode;
}

TEST(EmulatorWgmma, PlantedBugsAreReported) {
  expect_wgmma_reported(6, "with no wgmma.fence before it");
  expect_wgmma_reported(7, "reads wgmma accumulator 0 before the wgmma.wait_group that covers");
  expect_wgmma_reported(8, "writes shared b16[0] while thread");
  expect_wgmma_reported(8, "'s wgmma still reads it");
  expect_wgmma_reported(9, "no fence.proxy.async.shared::cta after it");
  expect_wgmma_reported(10,
                        "warp 1's warpgroup instruction 2 is wgmma.mma_async.m64n16k16.f32.f16");
  expect_wgmma_reported(11, "which no shared array of the block holds");
  expect_wgmma_reported(12, "on accumulators it accessed after its last wgmma.fence");
}

}  // namespace
}  // namespace convjit::emulator
