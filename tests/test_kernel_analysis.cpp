// `convjit analyze`'s pieces on cases whose answers are worked out by hand:
// ptxas's per-entry resources (a log of NVRTC 13's format, and a real
// compile), the occupancy calculator's blocks per SM and what limits them,
// SASS listings read back into loops and instruction classes (a listing
// written out here, and real kernels through nvdisasm where it is
// installed), then the command itself.
#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "analysis/disassembler.hpp"
#include "analysis/entry_resources.hpp"
#include "analysis/gpu_spec.hpp"
#include "analysis/instruction_mix.hpp"
#include "analysis/occupancy.hpp"
#include "analysis/sass_listing.hpp"
#include "dispatcher/backends/jit/nvrtc_compiler.hpp"
#include "dispatcher/backends/jit/nvrtc_library.hpp"
#include "support/spawned_process.hpp"

namespace convjit::analysis {
namespace {

// NVRTC 13.0's -Xptxas=-v log for two entries and a non-inlined helper.
constexpr const char* kPtxasLog = R"(ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'convjit_kernel_finish' for 'sm_90'
ptxas info    : Function properties for convjit_kernel_finish
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
ptxas info    : Compile time = 7.803 ms
ptxas info    : Compiling entry function 'convjit_kernel' for 'sm_90'
ptxas info    : Function properties for convjit_kernel
ptxas         .     160 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 34 registers, used 1 barriers, 160 bytes cumulative stack size, 4096 bytes smem
ptxas info    : Compile time = 9.117 ms
ptxas info    : Function properties for _Z6helperPfi
ptxas         .     40 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
)";

TEST(EntryResources, EachEntryOfAPtxasLogWithItsOwnFrameAndNotTheHelpers) {
  const auto entries = parse_entry_resources(kPtxasLog);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].name, "convjit_kernel_finish");
  EXPECT_EQ(entries[0].arch, "sm_90");
  EXPECT_EQ(entries[0].registers, 8);
  EXPECT_EQ(entries[0].barriers, 0);
  EXPECT_EQ(entries[0].shared_bytes, 0);
  EXPECT_FALSE(entries[0].spills());
  EXPECT_EQ(entries[1].name, "convjit_kernel");
  EXPECT_EQ(entries[1].registers, 34);
  EXPECT_EQ(entries[1].barriers, 1);
  EXPECT_EQ(entries[1].shared_bytes, 4096);
  EXPECT_EQ(entries[1].stack_bytes, 160);
  EXPECT_EQ(entries[1].cumulative_stack_bytes, 160);
  EXPECT_EQ(entries[1].spill_store_bytes, 8);
  EXPECT_EQ(entries[1].spill_load_bytes, 12);
}

Result<CompiledModule> compile_text(const std::string& text, const std::string& arch) {
  KernelSource source;
  source.template_name = "test kernel";
  source.source = text;
  return compile_kernel(source, arch);
}

TEST(EntryResources, AreWhatPtxasGaveARealKernel) {
  if (Status s = NvrtcLibrary::instance().available(); !s.is_ok()) GTEST_SKIP() << s.message();
  // 1024 floats of static shared memory and one barrier.
  auto module = compile_text(R"(
extern "C" __global__ void convjit_kernel(float* p) {
  __shared__ float s[1024];
  s[threadIdx.x] = p[threadIdx.x];
  __syncthreads();
  p[threadIdx.x] = s[1023 - threadIdx.x];
})",
                             "sm_80");
  ASSERT_TRUE(module.is_ok()) << module.status().message();
  const auto entries = parse_entry_resources(module.value().log);
  ASSERT_EQ(entries.size(), 1u) << module.value().log;
  EXPECT_EQ(entries[0].arch, "sm_80");
  EXPECT_EQ(entries[0].shared_bytes, 4096);
  EXPECT_EQ(entries[0].barriers, 1);
  EXPECT_GT(entries[0].registers, 0);
}

const GpuSpec& gpu(std::string_view name) {
  for (const GpuSpec& spec : gpu_specs())
    if (spec.name == name) return spec;
  throw std::runtime_error("no GPU spec " + std::string(name));
}

EntryResources using_registers(int registers, long long shared = 0) {
  EntryResources r{.name = "k", .arch = "sm_90"};
  r.registers = registers;
  r.shared_bytes = shared;
  r.barriers = 1;
  return r;
}

TEST(Occupancy, BlocksPerSmAndTheirLimitAsWorkedOutByHand) {
  // 32 registers x 256 threads = 8 Ki: 8 blocks by registers, and 8 by the
  // SM's 64 warps.
  auto small = occupancy(gpu("H100 SXM"), using_registers(32), 256);
  ASSERT_TRUE(small.is_ok()) << small.status().message();
  EXPECT_EQ(small.value().blocks_per_sm, 8);
  EXPECT_EQ(small.value().warps_per_sm, 64);
  EXPECT_EQ(small.value().limiter, "registers and warps");
  // 90 registers are allocated as 96 (warps take them in units of 256):
  // 24 Ki a block, 2 blocks in 64 Ki, 16 of 64 warps.
  auto ninety = occupancy(gpu("H100 SXM"), using_registers(90), 256);
  ASSERT_TRUE(ninety.is_ok());
  EXPECT_EQ(ninety.value().blocks_per_sm, 2);
  EXPECT_EQ(ninety.value().warps_per_sm, 16);
  EXPECT_DOUBLE_EQ(ninety.value().fraction(), 0.25);
  EXPECT_EQ(ninety.value().limiter, "registers");
  // 100 KiB of dynamic shared memory plus the driver's 1 KiB: 228 / 101 = 2
  // blocks on an H100, 164 / 101 = 1 on an A100.
  EXPECT_EQ(occupancy(gpu("H100 SXM"), using_registers(32), 256, 100 * 1024).value().blocks_per_sm,
            2);
  auto a100 = occupancy(gpu("A100"), using_registers(32), 256, 100 * 1024);
  ASSERT_TRUE(a100.is_ok());
  EXPECT_EQ(a100.value().blocks_per_sm, 1);
  EXPECT_EQ(a100.value().limiter, "shared memory");
}

TEST(Occupancy, ABlockThatCannotRunIsRefusedNamingTheResource) {
  // 1024 threads x 128 registers = 128 Ki, twice the register file.
  auto too_big = occupancy(gpu("A100"), using_registers(128), 1024);
  ASSERT_FALSE(too_big.is_ok());
  EXPECT_NE(too_big.status().message().find("registers"), std::string::npos)
      << too_big.status().message();
}

TEST(GpuSpecs, EachArchitectureNamesItsGpus) {
  ASSERT_EQ(gpus_of_arch("sm_90").size(), 2u);
  EXPECT_EQ(gpus_of_arch("sm_90a").size(), 2u);
  ASSERT_EQ(gpus_of_arch("sm_80").size(), 1u);
  EXPECT_EQ(gpus_of_arch("sm_80")[0]->sms, 108);
  EXPECT_TRUE(gpus_of_arch("sm_75").empty());
  EXPECT_EQ(modelled_archs(), "sm_90, sm_80");
}

// An outer loop (a cp.async stage) around an inner one (ldmatrix + 2 MMAs),
// and a trap loop after EXIT, as nvdisasm lists them.
constexpr const char* kListing = R"(	.section	.text.k,"ax",@progbits
        .global         k
k:
.text.k:
        /*0000*/                   S2R R0, SR_TID.X ;
.L_x_0:
        /*0010*/                   LDGSTS.E.BYPASS.128.ZFILL [R1], desc[UR4][R2.64] ;
        /*0020*/                   IMAD R3, R3, 0x2, R0 ;
.L_x_1:
        /*0030*/                   LDSM.16.M88.4 R4, [R1] ;
        /*0040*/                   HMMA.16816.F32.BF16 R8, R4.reuse, R6, R8 ;
        /*0050*/                   HMMA.16816.F32.BF16 R12, R4, R7, R12 ;
        /*0060*/               @P0 BRA `(.L_x_1) ;
        /*0070*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
        /*0080*/              @!P1 BRA `(.L_x_0) ;
        /*0090*/                   EXIT ;
.L_x_2:
        /*00a0*/                   BRA `(.L_x_2);
)";

TEST(InstructionMix, TheMainLoopIsTheInnermostWithTheMostMmas) {
  const auto functions = parse_sass(kListing);
  ASSERT_EQ(functions.size(), 1u);
  const SassFunction& f = functions[0];
  EXPECT_EQ(f.name, "k");
  ASSERT_EQ(f.code.size(), 11u);
  EXPECT_EQ(f.code[4].opcode, "HMMA.16816.F32.BF16");
  EXPECT_EQ(f.code[6].target, ".L_x_1");
  EXPECT_TRUE(f.code[6].predicated);
  EXPECT_EQ(f.labels.at(".L_x_1"), 3u);
  const InstructionMix mix = instruction_mix(f);
  EXPECT_EQ(mix.whole.total, 11);
  EXPECT_EQ(mix.whole.of(InstructionClass::mma), 2);
  EXPECT_EQ(mix.whole.of(InstructionClass::ldgsts), 1);
  EXPECT_EQ(mix.whole.ldgsts_bytes, 16);
  EXPECT_EQ(mix.whole.of(InstructionClass::barrier), 1);
  EXPECT_EQ(mix.whole.of(InstructionClass::integer), 2);  // S2R, IMAD
  EXPECT_EQ(mix.whole.of(InstructionClass::control), 4);  // 3 BRA, EXIT
  ASSERT_TRUE(mix.main_loop);
  EXPECT_EQ(mix.main_loop->first_offset, 0x30u);
  EXPECT_EQ(mix.main_loop->last_offset, 0x60u);
  EXPECT_EQ(mix.main_loop->counts.total, 4);
  EXPECT_EQ(mix.main_loop->counts.of(InstructionClass::mma), 2);
  EXPECT_EQ(mix.main_loop->counts.of(InstructionClass::ldsm), 1);
  EXPECT_EQ(mix.main_loop->inner_loops, 0);
  EXPECT_EQ(mix.main_loop->outside_inner.total, 4);
}

// A main loop around a fallback path's loop: what runs per trip ranges
// from the code outside the inner loop to all of it.
TEST(InstructionMix, TheMainLoopKnowsWhatLiesOutsideItsInnerLoops) {
  const auto functions = parse_sass(R"(	.section	.text.k2,"ax",@progbits
        .global         k2
k2:
.text.k2:
        /*0000*/                   S2R R0, SR_TID.X ;
.L_x_0:
        /*0010*/                   HMMA.16816.F32.BF16 R8, R4, R6, R8 ;
        /*0020*/                   HMMA.16816.F32.BF16 R12, R4, R7, R12 ;
.L_x_1:
        /*0030*/                   LDG.E R2, desc[UR4][R2.64] ;
        /*0040*/                   IADD3 R3, R3, 0x1, RZ ;
        /*0050*/               @P0 BRA `(.L_x_1) ;
        /*0060*/              @!P1 BRA `(.L_x_0) ;
        /*0070*/                   EXIT ;
)");
  ASSERT_EQ(functions.size(), 1u);
  const InstructionMix mix = instruction_mix(functions[0]);
  ASSERT_TRUE(mix.main_loop);
  EXPECT_EQ(mix.main_loop->first_offset, 0x10u);
  EXPECT_EQ(mix.main_loop->inner_loops, 1);
  EXPECT_EQ(mix.main_loop->counts.total, 6);
  EXPECT_EQ(mix.main_loop->outside_inner.total, 3);  // 2 HMMA and the outer branch
  EXPECT_EQ(mix.main_loop->outside_inner.of(InstructionClass::mma), 2);
  EXPECT_EQ(mix.main_loop->outside_inner.of(InstructionClass::ldg), 0);
}

TEST(InstructionMix, ALoopFreeKernelHasNoMainLoop) {
  const auto functions = parse_sass(R"(.text.k:
        /*0000*/                   S2R R0, SR_TID.X ;
        /*0010*/                   STG.E desc[UR4][R2.64], R0 ;
        /*0020*/                   EXIT ;
)");
  ASSERT_EQ(functions.size(), 1u);
  const InstructionMix mix = instruction_mix(functions[0]);
  EXPECT_EQ(mix.whole.of(InstructionClass::stg), 1);
  EXPECT_FALSE(mix.main_loop);
}

const char* no_tool_environment(const char* name) {
  // CONVJIT_NVDISASM names a file that is not a program: nothing else is searched.
  return std::string_view(name) == "CONVJIT_NVDISASM" ? "/dev/null" : nullptr;
}

TEST(Disassembler, ASettingThatNamesNoProgramIsRefusedSayingWhereAndHow) {
  auto found = find_disassembler(no_tool_environment);
  ASSERT_FALSE(found.is_ok());
  EXPECT_EQ(found.status().code(), CONVJIT_STATUS_NOT_AVAILABLE);
  const std::string message = found.status().message();
  EXPECT_NE(message.find("CONVJIT_NVDISASM=/dev/null: not executable"), std::string::npos)
      << message;
  EXPECT_NE(message.find("pip install nvidia-cuda-nvdisasm"), std::string::npos) << message;
}

class RealSass : public ::testing::Test {
 protected:
  void SetUp() override {
    if (Status s = NvrtcLibrary::instance().available(); !s.is_ok()) GTEST_SKIP() << s.message();
    auto found = find_disassembler(process_environment);
    if (!found.is_ok()) GTEST_SKIP() << found.status().message();
    tool_ = found.value();
  }

  InstructionMix mix_of(const std::string& text) {
    auto module = compile_text(text, "sm_90");
    EXPECT_TRUE(module.is_ok()) << module.status().message();
    auto listing = disassemble(tool_, module.value().cubin);
    EXPECT_TRUE(listing.is_ok()) << listing.status().message();
    const auto functions = parse_sass(listing.value());
    EXPECT_EQ(functions.size(), 1u) << listing.value();
    return instruction_mix(functions.at(0));
  }

  Disassembler tool_;
};

TEST_F(RealSass, ALoopOfOneTensorCoreMmaAndOneLoad) {
  const InstructionMix mix = mix_of(R"(
extern "C" __global__ void convjit_kernel(const unsigned* a, float* out, int n) {
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  unsigned a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3], b0 = a[4], b1 = a[5];
#pragma unroll 1
  for (int i = 0; i < n; ++i) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d0), "+f"(d1), "+f"(d2), "+f"(d3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
    a0 = a[i + 8];
  }
  out[threadIdx.x] = d0 + d1 + d2 + d3;
})");
  ASSERT_TRUE(mix.main_loop);
  EXPECT_EQ(mix.main_loop->counts.of(InstructionClass::mma), 1);
  EXPECT_EQ(mix.main_loop->counts.of(InstructionClass::ldg), 1);
  EXPECT_EQ(mix.whole.of(InstructionClass::mma), 1);
}

TEST_F(RealSass, ALoopOfFmasOverLoadsHasNoMma) {
  const InstructionMix mix = mix_of(R"(
extern "C" __global__ void convjit_kernel(const float* p, float* out, int n) {
  float acc = 0;
#pragma unroll 1
  for (int i = 0; i < n; ++i) acc = fmaf(acc, p[i], 1.0f);
  out[threadIdx.x] = acc;
})");
  ASSERT_TRUE(mix.main_loop);
  EXPECT_EQ(mix.main_loop->counts.of(InstructionClass::mma), 0);
  EXPECT_EQ(mix.main_loop->counts.of(InstructionClass::ldg), 1);
  EXPECT_EQ(mix.main_loop->counts.of(InstructionClass::float_math), 1);
}

test::Outcome analyze(const std::string& args) {
  return test::spawn(std::string("CONVJIT_LOCAL_CACHE_PATH=none ") + CONVJIT_CLI_PATH +
                     " analyze " + args);
}

TEST(AnalyzeCommand, ReportsEachEntryOfTheAutoVariantAsJson) {
  if (Status s = NvrtcLibrary::instance().available(); !s.is_ok()) GTEST_SKIP() << s.message();
  const auto out = analyze(
      "conv --x 2,64,14,14 --w 64,64,3,3 --pad 1,1 --layout nhwc --dtype bf16 --arch sm_80 "
      "--variant auto --json");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto report = nlohmann::json::parse(out.output);
  ASSERT_EQ(report.size(), 1u);
  const auto& variant = report[0]["variants"].at(0);
  EXPECT_TRUE(variant["auto"].get<bool>());
  ASSERT_FALSE(variant["entries"].empty());
  for (const auto& entry : variant["entries"]) {
    EXPECT_GT(entry["registers"].get<int>(), 0) << entry.dump();
    EXPECT_EQ(entry["threads_per_block"].get<int>(), 256);
    ASSERT_EQ(entry["occupancy"].size(), 1u);  // the A100
    EXPECT_GE(entry["occupancy"][0]["blocks_per_sm"].get<int>(), 1) << entry.dump();
  }
}

// The blocks an SM holds count each block's dynamic shared memory: the
// pixels kernel of a stride-2 bwddata of 16 channels to 32 filters (YOLO11n's
// b1) keeps 93 KiB of filters and halo a block, so two fit an H100's or
// H200's 228 KiB, where its 64 registers alone would allow four.
TEST(AnalyzeCommand, OccupancyCountsEachBlocksDynamicSharedMemory) {
  if (Status s = NvrtcLibrary::instance().available(); !s.is_ok()) GTEST_SKIP() << s.message();
  const auto out = analyze(
      "conv --x 2,16,40,40 --w 32,16,3,3 --stride 2,2 --pad 1,1 --layout nhwc --dtype bf16 "
      "--op bwddata --arch sm_90 --variant pixels --sample-blocks 0 --json");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto report = nlohmann::json::parse(out.output);
  const auto& entry = report[0]["variants"].at(0)["entries"].at(0);
  EXPECT_EQ(entry["dynamic_shared_bytes"].get<int>(), 93312) << entry.dump();
  ASSERT_EQ(entry["occupancy"].size(), 2u);  // the H100 and the H200
  for (const auto& o : entry["occupancy"]) {
    EXPECT_EQ(o["blocks_per_sm"].get<int>(), 2) << o.dump();
    EXPECT_EQ(o["limiter"].get<std::string>(), "shared memory") << o.dump();
  }
}

// --w-unchanged predicts calls that promise w unchanged: a Hopper conv of
// K C R S filters skips its copy of them, which the JSON marks skipped and
// the variant's time leaves out.
TEST(AnalyzeCommand, WUnchangedLeavesTheFiltersCopyOutOfTheTime) {
  if (Status s = NvrtcLibrary::instance().available(); !s.is_ok()) GTEST_SKIP() << s.message();
  const std::string conv =
      "conv --x 2,64,8,8 --w 64,64,3,3 --pad 1,1 --layout nhwc --dtype bf16 --arch sm_90 "
      "--variant wgmma128x64 --sample-blocks 1 --json";
  const auto each = analyze(conv), once = analyze(conv + " --w-unchanged");
  ASSERT_EQ(each.exit_code, 0) << each.output;
  ASSERT_EQ(once.exit_code, 0) << once.output;
  const auto every = nlohmann::json::parse(each.output)[0]["variants"].at(0)["predicted"];
  const auto reused = nlohmann::json::parse(once.output)[0]["variants"].at(0)["predicted"];
  ASSERT_EQ(every.size(), 2u);  // the H100 and the H200
  ASSERT_EQ(reused.size(), 2u);
  for (std::size_t g = 0; g < 2; ++g) {
    const auto& kernels = reused[g]["kernels"];
    ASSERT_EQ(kernels.size(), 2u) << reused[g].dump();
    EXPECT_TRUE(kernels[0].value("skipped", false)) << kernels[0].dump();
    EXPECT_FALSE(kernels[1].value("skipped", false)) << kernels[1].dump();
    EXPECT_FALSE(every[g]["kernels"][0].value("skipped", false));
    for (std::size_t end = 0; end < 2; ++end) {
      EXPECT_DOUBLE_EQ(reused[g]["seconds"][end].get<double>(),
                       kernels[1]["seconds"][end].get<double>());
      EXPECT_DOUBLE_EQ(
          every[g]["seconds"][end].get<double>(),
          kernels[0]["seconds"][end].get<double>() + kernels[1]["seconds"][end].get<double>());
    }
  }
}

TEST(AnalyzeCommand, RefusesAnArchitectureNoGpuModelsAndTwoInputs) {
  auto unknown = analyze("conv --x 1,8,8,8 --w 8,8,3,3 --arch sm_75");
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find("sm_90, sm_80"), std::string::npos) << unknown.output;
  auto variant = analyze("conv --x 1,8,8,8 --w 8,8,3,3 --arch sm_90 --variant tc999x1");
  EXPECT_EQ(variant.exit_code, 2) << variant.output;
  EXPECT_NE(variant.output.find("--variant tc999x1"), std::string::npos) << variant.output;
  auto both = analyze("conv --x 1,8,8,8 --w 8,8,3,3 --model resnet50 --arch sm_90");
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_NE(both.output.find("not both"), std::string::npos) << both.output;
  auto direction = analyze("conv --x 1,8,8,8 --w 8,8,3,3 --arch sm_90 --direction fwd");
  EXPECT_EQ(direction.exit_code, 2) << direction.output;
  EXPECT_NE(direction.output.find("--direction selects among --model's ops"), std::string::npos)
      << direction.output;
}

// --direction keeps a model's ops of that direction: a one-layer table's
// fwd and bwdfilt (its input layer has no bwddata), bwdfilt alone here.
TEST(AnalyzeCommand, ADirectionSelectsAModelsOpsOfIt) {
  if (Status s = NvrtcLibrary::instance().available(); !s.is_ok()) GTEST_SKIP() << s.message();
  const std::string table = ::testing::TempDir() + "/analyze-direction.json";
  std::ofstream(table) << R"({"name": "one", "image_size": 8, "layers": [
      {"name": "stem", "in": 8, "out": 16, "kernel": 3, "input_layer": true}]})";
  const auto out = analyze("--table " + table +
                           " --dtype bf16 --layout nhwc --arch sm_90 --variant auto "
                           "--sample-blocks 0 --direction bwdfilt --json");
  ASSERT_EQ(out.exit_code, 0) << out.output;
  const auto report = nlohmann::json::parse(out.output);
  int ops = 0;
  for (const auto& op : report)
    if (op.contains("descriptor")) {
      ++ops;
      EXPECT_NE(op["descriptor"].get<std::string>().find("_bwdfilt_"), std::string::npos)
          << op.dump();
    }
  EXPECT_EQ(ops, 1);
}

}  // namespace
}  // namespace convjit::analysis
