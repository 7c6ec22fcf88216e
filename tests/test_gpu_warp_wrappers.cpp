// The warp-level wrappers on a real GPU against the emulator: each test
// template of tests/emulator_templates (shuffles and votes, vector memory,
// cp.async, ldmatrix, mma.sync in f16, bf16 and tf32) is compiled with
// NVRTC for the device, run on it, and run in the emulator on the same
// inputs.  Shuffles, copies and ldmatrix must match bit for bit; mma
// within the tolerance of support/test_templates.hpp.  Without a CUDA device
// the test is skipped with the reason.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>

#include "dispatcher/cuda/gpu_arch.hpp"
#include "support/gpu_template_run.hpp"

namespace convjit {
namespace {

TEST(GpuWarpWrappers, EachTestTemplateMatchesTheEmulator) {
  auto context = DeviceContext::open(0);
  if (!context.is_ok()) GTEST_SKIP() << "no CUDA device: " << context.status().message();
  const std::string arch = CudaDriver::instance().arch_of(0);
  if (arch_number(arch) < 80) GTEST_SKIP() << arch << " has no cp.async, bf16 or tf32 mma";
  for (const test::WarpCase& c : test::warp_cases()) {
    SCOPED_TRACE(c.label);
    const test::TemplateRun emulated =
        test::run_emulated(c.template_name, c.mode, c.input, c.output_size, c.threads);
    ASSERT_TRUE(emulated.status.is_ok()) << emulated.status.message();
    auto gpu = test::run_on_gpu(context.value(), arch,
                                {c.template_name, c.mode, c.input, c.output_size, c.threads, {}});
    ASSERT_TRUE(gpu.is_ok()) << gpu.status().message();
    double worst = 0;
    std::size_t worst_at = 0;
    for (std::size_t i = 0; i < c.output_size; ++i) {
      const float e = emulated.output[i], g = gpu.value()[i];
      const double error = std::bit_cast<std::uint32_t>(e) == std::bit_cast<std::uint32_t>(g)
                               ? 0.0
                               : std::abs(double{g} - double{e}) / (1.0 + std::abs(double{e}));
      if (!(error <= worst)) worst = std::isnan(error) ? INFINITY : error, worst_at = i;
    }
    std::printf("%-14s %-18s worst relative difference %.3g at %zu\n", c.label.c_str(),
                c.template_name, worst, worst_at);
    EXPECT_LE(worst, c.tolerance) << "element " << worst_at << ": GPU "
                                  << gpu.value()[worst_at] << ", emulator "
                                  << emulated.output[worst_at];
  }
}

}  // namespace
}  // namespace convjit
