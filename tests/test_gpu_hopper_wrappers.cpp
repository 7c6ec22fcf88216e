// The Hopper wrappers on a real GPU against the emulator: the mbarrier
// test template (common/mbarrier.cuh), every working mode of the TMA one
// (common/tma.cuh, support/tma_cases.hpp), and 200 KiB of dynamic shared
// memory with setmaxnreg (block_resources.cuh), compiled with NVRTC for
// sm_90a, run on the device with tensor maps the driver encodes, and run
// in the emulator on the same inputs and maps.  Bit for bit: both only
// move data or add in the same order.  Skipped with the reason without an
// sm_90 device.
#include <gtest/gtest.h>

#include <bit>
#include <cstdio>

#include "dispatcher/cuda/gpu_arch.hpp"
#include "support/gpu_template_run.hpp"
#include "support/tma_cases.hpp"

namespace convjit {
namespace {

std::vector<test::GpuTemplateRun> hopper_runs() {
  constexpr long long kThreads = 2 * test::kWarpBlock;
  std::vector<test::GpuTemplateRun> runs = {
      {"mbarrier.cuh", 0, test::iota_from(kThreads, 1.0f), 3 * kThreads, kThreads, {}},
      {"block_resources.cuh", 0, test::iota_from(kThreads, 1.0f), kThreads, kThreads, {},
       200 * 1024}};
  for (long long mode : test::kTmaWorkingModes) {
    test::TmaCase k = test::tma_case(mode);
    runs.push_back(
        {"tma.cuh", mode, std::move(k.input), k.output_size, k.threads, std::move(k.maps)});
  }
  return runs;
}

TEST(GpuHopperWrappers, EachTestTemplateMatchesTheEmulatorBitForBit) {
  auto context = DeviceContext::open(0);
  if (!context.is_ok()) GTEST_SKIP() << "no CUDA device: " << context.status().message();
  const std::string arch = CudaDriver::instance().arch_of(0);
  if (arch_number(arch) != 90) GTEST_SKIP() << arch << " is not sm_90: the tests target sm_90a";
  for (const test::GpuTemplateRun& run : hopper_runs()) {
    SCOPED_TRACE(std::string(run.template_name) + " mode " + std::to_string(run.mode));
    test::EmulatedRunOptions options;
    options.tensor_maps = run.tensor_maps;
    options.dynamic_shared_bytes = run.dynamic_shared_bytes;
    const test::TemplateRun emulated = test::run_emulated(
        run.template_name, run.mode, run.input, run.output_size, run.threads, std::move(options));
    ASSERT_TRUE(emulated.status.is_ok()) << emulated.status.message();
    auto gpu = test::run_on_gpu(context.value(), "sm_90a", run);
    ASSERT_TRUE(gpu.is_ok()) << gpu.status().message();
    std::size_t differing = 0, first = 0;
    for (std::size_t i = 0; i < run.output_size; ++i)
      if (std::bit_cast<std::uint32_t>(emulated.output[i]) !=
          std::bit_cast<std::uint32_t>(gpu.value()[i]))
        if (differing++ == 0) first = i;
    std::printf("%-13s mode %2lld: %zu of %zu elements differ\n", run.template_name, run.mode,
                differing, run.output_size);
    EXPECT_EQ(differing, 0u) << "first at " << first << ": GPU " << gpu.value()[first]
                             << ", emulator " << emulated.output[first];
  }
}

}  // namespace
}  // namespace convjit
