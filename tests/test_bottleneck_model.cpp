// The bottleneck model (analysis/bottleneck_model.hpp) on kernels made up
// here, whose every limit is worked out by hand from the H100 SXM's row of
// analysis/gpu_throughput.cpp: 132 SMs at 1.83 GHz, one m16n8k16 a clock
// per SM at peak (mma.sync reaching 0.55-0.65 of it), 1.87 shared
// wavefronts and 4 issues a clock, HBM 2.8-3.0 TB/s, L2 50 MB at 8-10
// TB/s, DRAM latency 330-500 ns.
#include <gtest/gtest.h>

#include "analysis/bottleneck_model.hpp"

namespace convjit::analysis {
namespace {

using emulator::AccessSite;
using emulator::KernelMemoryCounters;
using emulator::MemoryOp;
using emulator::MemorySpace;

const GpuSpec& h100() { return *gpus_of_arch("sm_90").at(0); }

constexpr double kSmClocks = 132 * 1.83e9;  // SM-clocks a second, device-wide

// `blocks` blocks at `blocks_per_sm` (8 warps each), doing `mma` mma.sync
// and nothing else the model counts.
EntryAnalysis kernel(unsigned blocks, int blocks_per_sm, double mma) {
  EntryAnalysis e;
  e.launch = {"k", 0, blocks};
  e.occupancy.push_back({&h100(), Occupancy{blocks_per_sm, 8 * blocks_per_sm, 64, "registers"}});
  e.memory = KernelMemoryCounters{};
  e.memory->blocks = blocks;
  e.memory->mma_instructions = mma;
  return e;
}

Range limit(const KernelPrediction& p, std::string_view name) {
  for (const Limit& l : p.limits)
    if (l.name == name) return l.seconds;
  ADD_FAILURE() << "no " << name << " limit";
  return {};
}

void expect_range(Range got, double low, double high) {
  EXPECT_NEAR(got.low, low, 1e-9 * low);
  EXPECT_NEAR(got.high, high, 1e-9 * high);
}

TEST(BottleneckModel, ATensorBoundKernelTakesItsMmasAtMmaSyncsReach) {
  // One full wave: 2 blocks on each of 132 SMs, 1000 mma.sync each.
  const auto p = predict_kernel(kernel(264, 2, 264 * 1000.0), h100(), nullptr);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_DOUBLE_EQ(p.value().waves, 1.0);
  const double clocks = 264 * 1000.0 / kSmClocks;
  expect_range(limit(p.value(), "tensor"), clocks / 0.65, clocks / 0.55);
  EXPECT_EQ(p.value().limiter, "tensor");
  expect_range(p.value().seconds, clocks / 0.65, clocks / 0.55);
}

TEST(BottleneckModel, ALastPartialWaveCostsAWholeOne) {
  const auto full = predict_kernel(kernel(264, 2, 264 * 1000.0), h100(), nullptr);
  const auto over = predict_kernel(kernel(265, 2, 265 * 1000.0), h100(), nullptr);
  ASSERT_TRUE(full.is_ok() && over.is_ok());
  EXPECT_NEAR(over.value().waves, 265.0 / 264, 1e-12);
  // Two waves' time for 265 blocks' work: (265 / 264 waves) -> 2.
  EXPECT_NEAR(limit(over.value(), "tensor").low / limit(full.value(), "tensor").low, 2.0, 1e-9);
}

TEST(BottleneckModel, SharedWavefrontsTakeTheirMeasuredRatePerSm) {
  EntryAnalysis e = kernel(264, 2, 0);
  e.memory->sites.push_back(
      {AccessSite{MemorySpace::shared, MemoryOp::load, 4, 0, 0}, "shared s", 1e6, 4e6, 1e6});
  const auto p = predict_kernel(e, h100(), nullptr);
  ASSERT_TRUE(p.is_ok());
  expect_range(limit(p.value(), "shared"), 4e6 / 1.87 / kSmClocks, 4e6 / 1.87 / kSmClocks);
  EXPECT_EQ(p.value().limiter, "shared");
}

TEST(BottleneckModel, DramMovesTheFootprintAndWhatAnL2TooSmallForItMisses) {
  EntryAnalysis e = kernel(264, 8, 0);  // 64 warps a SM: latency covered
  const double sectors = 300e6 / 32, footprint = 100e6 / 32;
  e.memory->sites.push_back(
      {AccessSite{MemorySpace::global, MemoryOp::load, 16, 0, 0}, "x", 1, sectors, sectors});
  e.memory->footprint.push_back({"x", footprint, static_cast<std::int64_t>(footprint)});
  const auto p = predict_kernel(e, h100(), nullptr);
  ASSERT_TRUE(p.is_ok());
  // 100 MB, and half of the other 200 MB requested: L2 holds 50 of the 100.
  expect_range(limit(p.value(), "dram"), 200e6 / 3.0e12, 200e6 / 2.8e12);
  expect_range(limit(p.value(), "l2"), 300e6 / 10e12, 300e6 / 8e12);
  EXPECT_DOUBLE_EQ(p.value().latency_stretch, 1.0);
  EXPECT_EQ(p.value().limiter, "dram");

  // Within L2, only the footprint goes to DRAM.
  e.memory->footprint[0].sectors = 40e6 / 32;
  const auto fits = predict_kernel(e, h100(), nullptr);
  ASSERT_TRUE(fits.is_ok());
  expect_range(limit(fits.value(), "dram"), 40e6 / 3.0e12, 40e6 / 2.8e12);
}

TEST(BottleneckModel, TooFewBytesInFlightStretchTheDramTime) {
  // 4 warps a SM, one 16-byte load a thread: 2 KiB in flight, where
  // 415 ns x 2.9 TB/s / 132 SMs are needed.
  EntryAnalysis e = kernel(132, 1, 0);
  e.occupancy[0].occupancy = Occupancy{1, 4, 64, "blocks"};
  e.memory->footprint.push_back({"x", 1e6, 1000000});
  const auto p = predict_kernel(e, h100(), nullptr);
  ASSERT_TRUE(p.is_ok());
  EXPECT_NEAR(p.value().latency_stretch, 415e-9 * 2.9e12 / 132 / 2048, 1e-9);
  // A GEMM tile's pipeline keeps (stages - 1) stages in flight instead.
  const GemmTile tile{"t", 128, 128, 2, 4, 3, GemmMath::tensor_core};
  const auto piped = predict_kernel(e, h100(), &tile);
  ASSERT_TRUE(piped.is_ok());
  EXPECT_DOUBLE_EQ(piped.value().latency_stretch, 1.0);  // 2 x 256 x 64 B = 32 KiB
}

TEST(BottleneckModel, IssueIsTheMainLoopsInstructionsPerAnchorTimesTheDynamicAnchors) {
  EntryAnalysis e = kernel(264, 2, 264 * 1000.0);
  SassLoop loop;
  loop.counts.count[static_cast<int>(InstructionClass::mma)] = 16;
  loop.counts.total = 1600;
  loop.outside_inner = loop.counts;
  loop.outside_inner.total = 800;
  e.mix = InstructionMix{"k", loop.counts, loop};
  const auto p = predict_kernel(e, h100(), nullptr);
  ASSERT_TRUE(p.is_ok());
  // 264000 MMAs in trips of 16: 800 to 1600 instructions a trip, 4 a clock.
  const double trips = 264 * 1000.0 / 16;
  expect_range(limit(p.value(), "issue"), trips * 800 / 4 / kSmClocks,
               trips * 1600 / 4 / kSmClocks);
  EXPECT_EQ(p.value().limiter, "issue");
}

TEST(BottleneckModel, AKernelWithoutMemoryCountersOrOccupancyIsNotPredicted) {
  EntryAnalysis e = kernel(264, 2, 1);
  e.memory.reset();
  EXPECT_EQ(predict_kernel(e, h100(), nullptr).status().code(), CONVJIT_STATUS_NOT_AVAILABLE);
  EntryAnalysis f = kernel(264, 2, 1);
  f.occupancy.clear();
  EXPECT_EQ(predict_kernel(f, h100(), nullptr).status().code(), CONVJIT_STATUS_NOT_AVAILABLE);
}

TEST(GpuThroughput, EveryModelledGpuHasARow) {
  for (const GpuSpec& gpu : gpu_specs()) {
    const GpuThroughput* t = gpu_throughput(gpu);
    ASSERT_NE(t, nullptr) << gpu.name;
    EXPECT_LE(t->dram_bytes_per_s.high, t->peaks.bandwidth_gbs * 1e9) << gpu.name;
    // The model's tensor rate is the datasheet's peak.
    EXPECT_NEAR(t->tensor_flops_per_clock_sm * gpu.sms * t->clock_hz / 1e12, t->peaks.half_tflops,
                0.01 * t->peaks.half_tflops)
        << gpu.name;
    EXPECT_LE(t->mma_sync_fraction.high, 1.0) << gpu.name;
  }
}

}  // namespace
}  // namespace convjit::analysis
