// The bottleneck model (analysis/bottleneck_model.hpp) on kernels made up
// here, whose every limit is worked out by hand from the H100 SXM's row of
// analysis/gpu_throughput.cpp: 132 SMs at 1.83 GHz, one m16n8k16 a clock
// per SM at peak (mma.sync reaching 0.55-0.65 of it), 1.87 shared
// wavefronts of ldmatrix and 1 of LDS/STS and 4 issues a clock, HBM
// 2.8-3.0 TB/s, L2 50 MB at 8-10 TB/s, DRAM latency 330-500 ns.
#include <gtest/gtest.h>

#include "analysis/bottleneck_model.hpp"
#include "support/jit_problem_set.hpp"

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
  // One full wave: 2 blocks on each of 132 SMs, 10000 mma.sync each.
  const auto p = predict_kernel(kernel(264, 2, 264 * 10000.0), h100(), nullptr);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_DOUBLE_EQ(p.value().waves, 1.0);
  const double clocks = 264 * 10000.0 / kSmClocks;
  expect_range(limit(p.value(), "tensor"), clocks / 0.65, clocks / 0.55);
  EXPECT_EQ(p.value().limiter, "tensor");
  // Plus one round's exposed fill and drain of an mma.sync kernel.
  const Range fill = gpu_throughput(h100())->round_latency_mma_s;
  EXPECT_DOUBLE_EQ(p.value().rounds, 1.0);
  expect_range(p.value().seconds, clocks / 0.65 + fill.low, clocks / 0.55 + fill.high);
}

// The SM-bound limits are the busiest SM's blocks at its rate: a block
// alone on its SM has it to itself.
TEST(BottleneckModel, TheBusiestSmsBlocksBoundTheSmLimits) {
  const auto full = predict_kernel(kernel(264, 2, 264 * 1000.0), h100(), nullptr);
  const auto over = predict_kernel(kernel(265, 2, 265 * 1000.0), h100(), nullptr);
  ASSERT_TRUE(full.is_ok() && over.is_ok());
  EXPECT_NEAR(over.value().waves, 265.0 / 264, 1e-12);
  // Two blocks sharing each SM, then the 265th alone on one: 3 blocks' time
  // where the full wave takes 2, and a second round.
  EXPECT_NEAR(limit(over.value(), "tensor").low / limit(full.value(), "tensor").low, 1.5, 1e-9);
  EXPECT_DOUBLE_EQ(over.value().rounds, 2.0);

  // 64 blocks of 2 an SM run one an SM: as long as one block's work on one
  // SM, the same at 1 block an SM; a full wave's blocks share their SMs.
  const double clocks = 1000.0 / 0.55 / 1.83e9;  // the low end of the range
  for (const int blocks_per_sm : {1, 2}) {
    const auto part = predict_kernel(kernel(64, blocks_per_sm, 64 * 1000.0), h100(), nullptr);
    ASSERT_TRUE(part.is_ok());
    EXPECT_NEAR(limit(part.value(), "tensor").high, clocks, 1e-9 * clocks) << blocks_per_sm;
  }
  EXPECT_NEAR(limit(full.value(), "tensor").high, 2 * clocks, 1e-9 * clocks);
}

// ldmatrix's wavefronts at its measured 1.87 a clock, LDS's at the banks'
// one a clock.
TEST(BottleneckModel, SharedWavefrontsTakeTheirInstructionsRatePerSm) {
  EntryAnalysis e = kernel(264, 2, 0);
  e.memory->sites.push_back(
      {AccessSite{MemorySpace::shared, MemoryOp::ldmatrix, 16, 4, 0}, "shared s", 1e6, 4e6, 4e6});
  const auto p = predict_kernel(e, h100(), nullptr);
  ASSERT_TRUE(p.is_ok());
  expect_range(limit(p.value(), "shared"), 4e6 / 1.87 / kSmClocks, 4e6 / 1.87 / kSmClocks);
  EXPECT_EQ(p.value().limiter, "shared");
  e.memory->sites.push_back(
      {AccessSite{MemorySpace::shared, MemoryOp::load, 4, 0, 1}, "shared t", 1e6, 2e6, 1e6});
  const auto both = predict_kernel(e, h100(), nullptr);
  ASSERT_TRUE(both.is_ok());
  const double clocks = 4e6 / 1.87 + 2e6;
  expect_range(limit(both.value(), "shared"), clocks / kSmClocks, clocks / kSmClocks);
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
  // 264000 MMAs in trips of 16: 800 to 1600 instructions a trip (the inner
  // loops, without memory instructions to count their trips by, from not
  // at all to once a trip), 4 a clock at most; with 4 warps a scheduler of
  // the 5.4-6.0 it needs to issue every clock, 4/5.4-4/6.0 of that.
  const double trips = 264 * 1000.0 / 16;
  const Range needed = gpu_throughput(h100())->issue_warps_per_scheduler;
  expect_range(limit(p.value(), "issue"), trips * 800 / (4 * 4 / needed.low) / kSmClocks,
               trips * 1600 / (4 * 4 / needed.high) / kSmClocks);
  EXPECT_EQ(p.value().limiter, "issue");

  // 64 warps a SM (16 a scheduler) issue every clock.
  e.occupancy[0].occupancy = Occupancy{8, 64, 64, "warps"};
  const auto full = predict_kernel(e, h100(), nullptr);
  ASSERT_TRUE(full.is_ok());
  // The 264 blocks, 2 an SM, are still 16 warps an SM, 4 a scheduler: the
  // same issue as before, though 8 blocks an SM would fit.
  expect_range(limit(full.value(), "issue"), limit(p.value(), "issue").low,
               limit(p.value(), "issue").high);
  // 1056 blocks of 8 an SM: 64 warps an SM, which issue every clock.
  e.launch = {"k", 0, 1056};
  const auto wave = predict_kernel(e, h100(), nullptr);
  ASSERT_TRUE(wave.is_ok());
  expect_range(limit(wave.value(), "issue"), trips * 800 / 4 / kSmClocks,
               trips * 1600 / 4 / kSmClocks);
}

// Inner loops run as often as their memory instructions say: a trip of
// 16 MMAs and 100 instructions, 2 of them memory ones, with an inner loop
// of 20 instructions, 2 of them memory ones, and 40 instructions around
// the main loop (2 memory ones) that each of the 1056 x 8 warps runs once;
// one full wave of 8 blocks a SM.
TEST(BottleneckModel, InnerLoopsRunAsOftenAsTheirMemoryInstructionsSay) {
  const double trips = 1056 * 1000.0 / 16, warps = 1056 * 8;
  EntryAnalysis e = kernel(1056, 8, 1056 * 1000.0);
  SassLoop loop;
  loop.outside_inner.count[static_cast<int>(InstructionClass::mma)] = 16;
  loop.outside_inner.count[static_cast<int>(InstructionClass::ldg)] = 1;
  loop.outside_inner.count[static_cast<int>(InstructionClass::sts)] = 1;
  loop.outside_inner.total = 100;
  loop.counts = loop.outside_inner;
  loop.counts.count[static_cast<int>(InstructionClass::ldg)] += 1;
  loop.counts.count[static_cast<int>(InstructionClass::sts)] += 1;
  loop.counts.total += 20;
  InstructionCounts whole = loop.counts;
  whole.count[static_cast<int>(InstructionClass::stg)] = 2;
  whole.total += 40;
  e.mix = InstructionMix{"k", whole, loop};
  // The emulator's requests: each trip's 2, 7 inner trips' 2 a trip, 2 a warp.
  const double requests = trips * 2 + 7 * trips * 2 + warps * 2;
  e.memory->sites.push_back({AccessSite{MemorySpace::global, MemoryOp::load, 16, 0, 0}, "x",
                             requests, requests, requests});
  const auto p = predict_kernel(e, h100(), nullptr);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const double instructions = trips * 100 + 7 * trips * 20 + warps * 40;
  expect_range(limit(p.value(), "issue"), instructions / 4 / kSmClocks,
               instructions / 4 / kSmClocks);
}

// Each round of resident blocks adds its exposed fill and drain, by how
// the kernel feeds its math, and one storing group's epilogue: here 3
// rounds of 2 blocks of 128 x 128 outputs, whose epilogues run side by
// side.
TEST(BottleneckModel, EachRoundOfBlocksAddsItsFillAndItsTilesEpilogues) {
  const GpuThroughput& row = *gpu_throughput(h100());
  const auto exposed = [&](const EntryAnalysis& e, long long outputs) {
    const auto p = predict_kernel(e, h100(), nullptr, outputs);
    EXPECT_TRUE(p.is_ok()) << p.status().message();
    EXPECT_DOUBLE_EQ(p.value().rounds, 3.0);
    return p.value().exposed_latency;
  };
  const double epilogue = 128 * 128;
  const EntryAnalysis mma = kernel(3 * 264 - 10, 2, 1000);
  expect_range(exposed(mma, 128 * 128), 3 * (row.round_latency_mma_s.low +
                                             epilogue * row.epilogue_s_per_output.low),
               3 * (row.round_latency_mma_s.high + epilogue * row.epilogue_s_per_output.high));
  EntryAnalysis wgmma = kernel(3 * 264 - 10, 2, 0);
  wgmma.memory->wgmma_mma_equivalents = 1000;
  expect_range(exposed(wgmma, 0), 3 * row.round_latency_wgmma_s.low,
               3 * row.round_latency_wgmma_s.high);
  const EntryAnalysis plain = kernel(3 * 264 - 10, 2, 0);
  expect_range(exposed(plain, 0), 3 * row.round_latency_plain_s.low,
               3 * row.round_latency_plain_s.high);
  // A kernel with nothing else to do is latency-bound.
  const auto p = predict_kernel(plain, h100(), nullptr);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p.value().limiter, "latency");
  expect_range(p.value().seconds, 3 * row.round_latency_plain_s.low,
               3 * row.round_latency_plain_s.high);
}

// Where a tile's stores scatter, its epilogue is its store sectors at the
// SM's rate, shared by the tiles storing on the SM at once: here 144 tiles
// of 128 x 128 outputs, 16,384 sectors each (2 bytes a lane, a sector a
// lane: ResNet-50's layer4 3 x 3 bwdfilt into K C R S dw), whose busiest
// SM runs 2, at once (2 blocks an SM: one round) or in turn (1: two
// rounds).  Stored as 1,024 sectors a tile, the per-output term is longer.
TEST(BottleneckModel, ATilesScatteredStoresTakeTheirSectorsAtTheSmsRate) {
  const GpuThroughput& row = *gpu_throughput(h100());
  const auto exposed = [&](int blocks_per_sm, double sectors_per_tile) {
    EntryAnalysis e = kernel(144, blocks_per_sm, 0);
    e.memory->wgmma_mma_equivalents = 1000;
    e.memory->sites.push_back({AccessSite{MemorySpace::global, MemoryOp::store, 2, 0, 0}, "dw",
                               144 * 512.0, 144 * sectors_per_tile, 144 * 16.0});
    const auto p = predict_kernel(e, h100(), nullptr, 128 * 128);
    EXPECT_TRUE(p.is_ok()) << p.status().message();
    return p.value().exposed_latency;
  };
  const Range fill = row.round_latency_wgmma_s;
  const Range sectors = row.store_sector_s * (2 * 16384.0);
  expect_range(exposed(2, 16384), fill.low + sectors.low, fill.high + sectors.high);
  expect_range(exposed(1, 16384), 2 * fill.low + sectors.low, 2 * fill.high + sectors.high);
  const Range outputs = row.epilogue_s_per_output * (128.0 * 128);
  expect_range(exposed(2, 1024), fill.low + outputs.low, fill.high + outputs.high);
}

// A persistent grid (the ping-pong Hopper tiles: a block an SM taking
// 300 tiles in turn, 3 for some) takes as long as its blocks with the
// most tiles, and exposes one round's fill and the last tile's epilogue,
// plus, where a tile's main loop is shorter than its epilogue, half the
// difference for each of the block's other tiles.
TEST(BottleneckModel, APersistentGridTakesItsFullestBlockAndHidesEpiloguesUnderMainLoops) {
  const GpuThroughput& row = *gpu_throughput(h100());
  const auto persistent = [](double wgmma) {
    EntryAnalysis e = kernel(132, 1, 0);
    e.launch.persistent_tiles = 300;
    e.memory->wgmma_mma_equivalents = wgmma;
    return e;
  };
  const auto predict = [&](const EntryAnalysis& e) {
    const auto p = predict_kernel(e, h100(), nullptr, 128 * 128);
    EXPECT_TRUE(p.is_ok()) << p.status().message();
    return p.value();
  };
  EntryAnalysis balanced = kernel(132, 1, 0);
  balanced.memory->wgmma_mma_equivalents = 1e8;
  const KernelPrediction long_loops = predict(persistent(1e8));
  EXPECT_DOUBLE_EQ(long_loops.rounds, 1.0);
  EXPECT_NEAR(limit(long_loops, "tensor").low / limit(predict(balanced), "tensor").low,
              3 * 132 / 300.0, 1e-12);
  const Range epilogue = row.epilogue_s_per_output * (128.0 * 128);
  ASSERT_GT(long_loops.seconds.low / 3, epilogue.high) << "main loops longer than epilogues";
  expect_range(long_loops.exposed_latency, row.round_latency_wgmma_s.low + epilogue.low,
               row.round_latency_wgmma_s.high + epilogue.high);
  // Main loops of next to no time (one wgmma, which makes it a wgmma
  // kernel): each of the block's first two tiles' epilogues is half exposed.
  const KernelPrediction short_loops = predict(persistent(1));
  EXPECT_NEAR(short_loops.exposed_latency.low, row.round_latency_wgmma_s.low + 2 * epilogue.low,
              1e-6 * epilogue.low);
  EXPECT_NEAR(short_loops.exposed_latency.high, row.round_latency_wgmma_s.high + 2 * epilogue.high,
              1e-6 * epilogue.high);
}

// With Stream-K the same grid shares the 300 tiles' K steps (here 7 a
// tile: 2100 units) evenly, so its fullest block has ceil(2100 / 132) =
// 16 units, 16/7 tiles' worth, not 3 tiles: the tensor limit follows.
TEST(BottleneckModel, AStreamKGridTakesItsFullestBlocksShareOfTheKSteps) {
  const auto predict = [&](long long units) {
    EntryAnalysis e = kernel(132, 1, 0);
    e.launch.persistent_tiles = 300;
    e.launch.persistent_units = units;
    e.memory->wgmma_mma_equivalents = 1e8;
    const auto p = predict_kernel(e, h100(), nullptr, 128 * 128);
    EXPECT_TRUE(p.is_ok()) << p.status().message();
    return p.value();
  };
  EntryAnalysis balanced = kernel(132, 1, 0);
  balanced.memory->wgmma_mma_equivalents = 1e8;
  const auto even = predict_kernel(balanced, h100(), nullptr, 128 * 128);
  ASSERT_TRUE(even.is_ok());
  EXPECT_NEAR(limit(predict(300 * 7), "tensor").low / limit(even.value(), "tensor").low,
              16.0 * 132 / 2100, 1e-12);
  EXPECT_NEAR(limit(predict(0), "tensor").low / limit(even.value(), "tensor").low, 3 * 132 / 300.0,
              1e-12)
      << "without units, whole tiles";
}

// A tile stored by TMA (a bulk store site in the kernel's counters) is
// charged the TMA store's epilogue range per output, not the threads'
// store's; it is narrower at its low end and never above the threads'.
TEST(BottleneckModel, ATileStoredByTmaIsChargedTheTmaStoresEpilogue) {
  const GpuThroughput& row = *gpu_throughput(h100());
  EntryAnalysis e = kernel(3 * 264 - 10, 2, 0);
  e.memory->wgmma_mma_equivalents = 1000;
  e.memory->sites.push_back(
      {AccessSite{MemorySpace::global, MemoryOp::bulk_store, 0, 0, 0}, "y", 96, 96, 96});
  const auto p = predict_kernel(e, h100(), nullptr, 128 * 128);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const double outputs = 128 * 128;
  expect_range(
      p.value().exposed_latency,
      3 * (row.round_latency_wgmma_s.low + outputs * row.tma_store_epilogue_s_per_output.low),
      3 * (row.round_latency_wgmma_s.high + outputs * row.tma_store_epilogue_s_per_output.high));
  EXPECT_LT(row.tma_store_epilogue_s_per_output.low, row.epilogue_s_per_output.low / 5);
  EXPECT_LE(row.tma_store_epilogue_s_per_output.high, row.epilogue_s_per_output.high);
}

// What a round charges for a variant's epilogue: one storing group's
// outputs, a GEMM tile's block or a Hopper consumer warpgroup, whose
// two-consumer tiles store their halves side by side (charged for the
// whole tile, their H200 times were 0.64-0.73x the prediction).
TEST(BottleneckModel, ARoundChargesTheEpilogueOfOneStoringGroup) {
  EXPECT_EQ(epilogue_outputs("wgmma128x128"), 128 * 128);
  EXPECT_EQ(epilogue_outputs("wgmma128x64"), 128 * 64);
  EXPECT_EQ(epilogue_outputs("wgmma256x128"), 128 * 128);
  EXPECT_EQ(epilogue_outputs("wgmma256x64"), 128 * 64);
  EXPECT_EQ(epilogue_outputs("wgmma128x256"), 128 * 128);
  EXPECT_EQ(epilogue_outputs("wgmma128x128p"), 128 * 128);  // a consumer's own tile
  const GemmTile& tile = convjit::gemm_tiles().front();
  EXPECT_EQ(epilogue_outputs(tile.id), static_cast<long long>(tile.bm) * tile.bn);
  EXPECT_EQ(epilogue_outputs("direct"), 0);
}

// A call that promises w unchanged (convjit_exec_t::w_version) skips the
// first pass that copies w: still predicted, marked skipped, and left out
// of the variant's time; the main kernel and a pass that copies nothing
// count either way.
TEST(BottleneckModel, ACallThatPromisesWUnchangedIsNotChargedWsCopy) {
  test::ConvCase c;
  c.batch = 2, c.channels = 64, c.filters = 64, c.input = {8, 8}, c.kernel = {3, 3};
  c.pad_begin = {1, 1}, c.layout = test::TestLayout::nhwc;
  const OpDescriptor d = test::descriptor(c, DataType::bf16, Direction::fwd);
  VariantAnalysis analysis;
  analysis.variant = "wgmma128x64";
  analysis.entries = {kernel(132, 1, 132 * 10.0), kernel(264, 2, 264 * 10000.0)};
  analysis.entries[0].launch.name = "convjit_kernel_prepare";
  analysis.entries[0].launch.copies_filters = true;
  analysis.entries[1].launch.name = "convjit_kernel";
  const std::vector<VariantPrediction> each = predict_variant(d, analysis);
  const std::vector<VariantPrediction> once = predict_variant(d, analysis, true);
  ASSERT_EQ(each.size(), once.size());
  for (std::size_t g = 0; g < each.size(); ++g) {
    SCOPED_TRACE(each[g].gpu->name);
    ASSERT_EQ(once[g].kernels.size(), 2u);
    EXPECT_FALSE(each[g].kernels[0].skipped);
    EXPECT_TRUE(once[g].kernels[0].skipped);
    EXPECT_FALSE(once[g].kernels[1].skipped);
    EXPECT_GT(once[g].kernels[0].seconds.low, 0) << "the skipped pass is still predicted";
    expect_range(once[g].seconds, once[g].kernels[1].seconds.low, once[g].kernels[1].seconds.high);
    expect_range(each[g].seconds, once[g].kernels[0].seconds.low + once[g].kernels[1].seconds.low,
                 once[g].kernels[0].seconds.high + once[g].kernels[1].seconds.high);
  }
  analysis.entries[0].launch.copies_filters = false;  // a pass that does more: a tap fold's
  const std::vector<VariantPrediction> folded = predict_variant(d, analysis, true);
  ASSERT_FALSE(folded.empty());
  EXPECT_FALSE(folded[0].kernels[0].skipped);
  expect_range(folded[0].seconds, each[0].seconds.low, each[0].seconds.high);
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
