// The Hopper wrappers on a real GPU against the emulator: the mbarrier
// test template (common/mbarrier.cuh), every working mode of the TMA one
// (common/tma.cuh, support/tma_cases.hpp), and 200 KiB of dynamic shared
// memory with setmaxnreg (block_resources.cuh), and two clusters of 2
// sharing multicast loads (cluster.cuh), compiled with NVRTC for
// sm_90a, run on the device with tensor maps the driver encodes, and run
// in the emulator on the same inputs and maps; likewise every working mode
// of the wgmma one (common/wgmma.cuh, support/wgmma_cases.hpp).  Bit for
// bit where both only move data or add in the same order; wgmma within
// mma's tolerance.  Skipped with the reason without an sm_90 device.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <string_view>
#include <cstdio>

#include "dispatcher/cuda/gpu_arch.hpp"
#include "support/gpu_template_run.hpp"
#include "support/tma_cases.hpp"
#include "support/wgmma_cases.hpp"

namespace convjit {
namespace {

// One test per template and mode, so that tools/gpu-check runs each in a
// process of its own: an illegal instruction ends the CUDA context, and on
// the first H200 one TMA mode's fault skipped every mode after it.
struct HopperRun {
  const char* template_name;
  long long mode;
};

std::vector<HopperRun> hopper_runs() {
  std::vector<HopperRun> runs = {
      {"mbarrier.cuh", 0}, {"block_resources.cuh", 0}, {"cluster.cuh", 0}};
  for (long long mode : test::kTmaWorkingModes) runs.push_back({"tma.cuh", mode});
  for (long long mode : test::kWgmmaWorkingModes) runs.push_back({"wgmma.cuh", mode});
  return runs;
}

test::GpuTemplateRun template_run(const HopperRun& run) {
  constexpr long long kThreads = 2 * test::kWarpBlock;
  const std::string_view name = run.template_name;
  if (name == "tma.cuh") {
    test::TmaCase k = test::tma_case(run.mode);
    return {run.template_name, run.mode, std::move(k.input), k.output_size, k.threads,
            std::move(k.maps)};
  }
  if (name == "wgmma.cuh") {
    test::WgmmaCase c = test::wgmma_case(run.mode);
    return {run.template_name, run.mode, std::move(c.input), c.output_size, test::kWarpBlock, {}};
  }
  if (name == "cluster.cuh") {
    // Two clusters of 2 (tests/test_emulator_cluster.cpp's inputs).
    constexpr long long kBlocks = 4;
    test::GpuTemplateRun cluster{run.template_name, 0, test::iota_from(32 * 16 * kBlocks, 1.0f),
                                 2 * kBlocks * test::kWarpBlock, kBlocks * test::kWarpBlock};
    cluster.tensor_maps = {test::tma_over_input(test::tma_tiled({32, 16 * kBlocks}, {32, 8}))};
    cluster.cluster_blocks = 2;
    return cluster;
  }
  if (name == "block_resources.cuh")
    return {run.template_name, 0, test::iota_from(kThreads, 1.0f), kThreads, kThreads, {},
            200 * 1024};
  return {run.template_name, 0, test::iota_from(kThreads, 1.0f), 3 * kThreads, kThreads, {}};
}

// The largest |GPU - emulator| relative to 1 + |emulator|: 0 where both
// only move data or add in order; wgmma's sums are in the tensor cores'
// order, so as mma.sync's (support/test_templates.hpp): 16 products of
// magnitude <= 4 per wgmma, 1e-5.
double compare(const std::vector<float>& emulated, const std::vector<float>& gpu,
               std::size_t& worst_at) {
  double worst = 0;
  for (std::size_t i = 0; i < emulated.size(); ++i) {
    const float e = emulated[i], g = gpu[i];
    const double error = std::bit_cast<std::uint32_t>(e) == std::bit_cast<std::uint32_t>(g)
                             ? 0.0
                             : std::abs(double{g} - double{e}) / (1.0 + std::abs(double{e}));
    if (!(error <= worst)) worst = std::isnan(error) ? INFINITY : error, worst_at = i;
  }
  return worst;
}

class GpuHopperWrappers : public ::testing::TestWithParam<HopperRun> {};

TEST_P(GpuHopperWrappers, TheTestTemplateMatchesTheEmulator) {
  auto context = DeviceContext::open(0);
  if (!context.is_ok()) GTEST_SKIP() << "no CUDA device: " << context.status().message();
  const std::string arch = CudaDriver::instance().arch_of(0);
  if (arch_number(arch) != 90) GTEST_SKIP() << arch << " is not sm_90: the tests target sm_90a";
  const test::GpuTemplateRun run = template_run(GetParam());
  test::EmulatedRunOptions options;
  options.tensor_maps = run.tensor_maps;
  options.dynamic_shared_bytes = run.dynamic_shared_bytes;
  options.cluster_blocks = run.cluster_blocks;
  const test::TemplateRun emulated = test::run_emulated(
      run.template_name, run.mode, run.input, run.output_size, run.threads, std::move(options));
  ASSERT_TRUE(emulated.status.is_ok()) << emulated.status.message();
  auto gpu = test::run_on_gpu(context.value(), "sm_90a", run);
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().message();
  std::size_t worst_at = 0;
  const double worst = compare(emulated.output, gpu.value(), worst_at);
  const double tolerance = std::string_view(run.template_name) == "wgmma.cuh" ? 1e-5 : 0.0;
  std::printf("%-19s mode %2lld: worst relative difference %.3g at %zu\n", run.template_name,
              run.mode, worst, worst_at);
  EXPECT_LE(worst, tolerance) << "element " << worst_at << ": GPU " << gpu.value()[worst_at]
                              << ", emulator " << emulated.output[worst_at];
}

// Named for the template and mode: tma_mode3.
INSTANTIATE_TEST_SUITE_P(EachTemplateAndMode, GpuHopperWrappers,
                         ::testing::ValuesIn(hopper_runs()),
                         [](const ::testing::TestParamInfo<HopperRun>& param) {
                           std::string name = param.param.template_name;
                           name = name.substr(0, name.find('.'));
                           return name + "_mode" + std::to_string(param.param.mode);
                         });

}  // namespace
}  // namespace convjit
