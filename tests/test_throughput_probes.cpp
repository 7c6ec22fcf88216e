// The calibration probes (analysis/throughput_probes.hpp,
// kernel_templates/calibration/throughput_probes.cuh): each one, small, in
// the emulator, must compute exactly what check_probe_output expects, so
// that `convjit calibrate` on a GPU times the work it names; the check
// must catch a wrong word; and the GPU-sized probes compile with NVRTC for
// sm_80 and sm_90 without spills, the memory probes without shared memory.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>

#include "analysis/throughput_probes.hpp"
#include "dispatcher/backends/emulator/kernel_emulator.hpp"
#include "dispatcher/backends/jit/nvrtc_compiler.hpp"
#include "dispatcher/backends/jit/nvrtc_library.hpp"
#include "support/test_templates.hpp"

namespace convjit {
namespace {

using analysis::ProbeKind;
using analysis::ProbePlan;

// Small enough for the emulator; odd where a size could hide a tail (the
// stream's 1000 chunks over 512 threads, the chase wrapping its cycle).
std::vector<ProbePlan> small_probes() {
  return {{ProbeKind::stream, {512, 1000, 1, 0}},
          {ProbeKind::l2_read, {512, 0, 64, 5}},
          {ProbeKind::mma, {256, 0, 1, 3}},
          {ProbeKind::ldmatrix, {256, 0, 1, 9}},
          {ProbeKind::chase, {256, 64 * analysis::kChaseSpacingChunks, 1, 100}}};
}

// The probe run in the emulator: its output as 32-bit words.
Result<std::vector<std::uint32_t>> emulate_probe(const ProbePlan& plan,
                                                 const std::vector<std::uint32_t>& input) {
  using namespace emulator;
  const KernelSource source = plan.source();
  const EmulatedTemplate* kernels = find_emulated_template(
      test_emulated_templates(), source.template_name, DataType::f32);
  if (kernels == nullptr)
    return Status(CONVJIT_STATUS_INTERNAL_ERROR, source.template_name + " is not emulated");
  std::vector<float> in(input.size()), out(plan.output_bytes() / sizeof(float), 0.0f);
  std::memcpy(in.data(), input.data(), input.size() * sizeof(float));
  test::AlignedFloats in_copy(in), out_copy(out);
  const BufferSpec x{"x", BufferRole::input, sizeof(float), static_cast<std::int64_t>(in.size()), {}};
  const BufferSpec y{"y", BufferRole::output, sizeof(float), static_cast<std::int64_t>(out.size()),
                     {}};
  EmulatedLaunch launch;
  launch.kernels = kernels;
  launch.source = &source;
  launch.in0 = {&x, in_copy.data()};
  launch.out = {&y, out_copy.data()};
  launch.out_destination = out.data();
  launch.beta = 1.0f;  // the chase reads its output, zeroed, as on the GPU
  if (Status s = emulate(launch); !s.is_ok()) return s;
  std::vector<std::uint32_t> words(out.size());
  std::memcpy(words.data(), out.data(), out.size() * sizeof(float));
  return words;
}

TEST(ThroughputProbes, EachComputesWhatItsCheckExpectsInTheEmulator) {
  for (const ProbePlan& plan : small_probes()) {
    SCOPED_TRACE(std::string(plan.name()));
    const std::vector<std::uint32_t> input = analysis::probe_input(plan);
    auto output = emulate_probe(plan, input);
    ASSERT_TRUE(output.is_ok()) << output.status().message();
    const Status every = analysis::check_probe_output(plan, input, output.value(), 1 << 20);
    EXPECT_TRUE(every.is_ok()) << every.message();
  }
}

TEST(ThroughputProbes, TheCheckCatchesOneWrongWordAndNamesIt) {
  for (const ProbePlan& plan : small_probes()) {
    SCOPED_TRACE(std::string(plan.name()));
    const std::vector<std::uint32_t> input = analysis::probe_input(plan);
    auto output = emulate_probe(plan, input);
    ASSERT_TRUE(output.is_ok()) << output.status().message();
    std::vector<std::uint32_t> wrong = output.value();
    wrong[0] ^= 1u;
    const Status s = analysis::check_probe_output(plan, input, wrong, 1 << 20);
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find(std::string(plan.name()) + " probe: output 0 word 0"),
              std::string::npos)
        << s.message();
  }
}

TEST(ThroughputProbes, TheChaseVisitsEveryLinkOnceInOneCycle) {
  const ProbePlan plan{ProbeKind::chase, {256, 1024 * analysis::kChaseSpacingChunks, 1, 0}};
  const std::vector<std::uint32_t> in = analysis::probe_input(plan);
  std::vector<bool> seen(1024, false);
  std::uint32_t at = 0;
  for (int k = 0; k < 1024; ++k) {
    ASSERT_EQ(at % analysis::kChaseSpacingChunks, 0u);
    ASSERT_FALSE(seen[at / analysis::kChaseSpacingChunks]) << "link " << at << " twice";
    seen[at / analysis::kChaseSpacingChunks] = true;
    at = in[4 * static_cast<std::size_t>(at)];
  }
  EXPECT_EQ(at, 0u) << "the cycle does not close after every link";
}

TEST(ThroughputProbes, WorkAndModelledRatesFollowTheirDefinitions) {
  const std::vector<ProbePlan> probes = analysis::calibration_probes(132);
  ASSERT_EQ(probes.size(), 5u);
  EXPECT_DOUBLE_EQ(probes[0].work(), 2.0 * (1LL << 30));  // 1 GiB read and written
  // 132 SMs x 4 blocks x 8 warps, four 16x8x16 mma a step.
  EXPECT_DOUBLE_EQ(probes[2].work(), 132.0 * 4 * 8 * 8192 * 4 * 2 * 16 * 8 * 16);
  const analysis::GpuSpec* h100 = analysis::gpu_spec_of_device("NVIDIA H100 80GB HBM3");
  ASSERT_NE(h100, nullptr);
  const analysis::GpuThroughput& t = *analysis::gpu_throughput(*h100);
  const analysis::Range mma = analysis::modelled_probe_rate(ProbeKind::mma, *h100, t);
  EXPECT_NEAR(mma.high / t.mma_sync_fraction.high, 989e12, 2e12);  // the dense bf16 peak
  EXPECT_EQ(analysis::modelled_probe_rate(ProbeKind::stream, *h100, t).low, t.dram_bytes_per_s.low);
  EXPECT_EQ(analysis::modelled_probe_rate(ProbeKind::chase, *h100, t).high, t.dram_latency_s.high);
  EXPECT_EQ(analysis::gpu_spec_of_device("NVIDIA H100 PCIe"), nullptr);
}

TEST(ThroughputProbes, GpuSizedProbesCompileWithoutSpillsAndMemoryProbesWithoutSharedMemory) {
  if (const Status& s = NvrtcLibrary::instance().available(); !s.is_ok())
    GTEST_SKIP() << "NVRTC is not available: " << s.message();
  for (const char* arch : {"sm_80", "sm_90"})
    for (const ProbePlan& plan : analysis::calibration_probes(132)) {
      SCOPED_TRACE(std::string(arch) + " " + std::string(plan.name()));
      auto compiled = compile_kernel(plan.source(), arch);
      ASSERT_TRUE(compiled.is_ok()) << compiled.status().message();
      const PtxasStats& stats = compiled.value().stats;
      EXPECT_EQ(stats.spill_stores + stats.spill_loads, 0);
      const long long shared = plan.kind == ProbeKind::ldmatrix ? 64 * 256 * 2 : 0;
      EXPECT_EQ(stats.shared_bytes, shared);
      if (plan.kind == ProbeKind::mma) {
        EXPECT_NE(compiled.value().ptx.find("mma.sync.aligned.m16n8k16"), std::string::npos);
      }
    }
}

}  // namespace
}  // namespace convjit
