// The JIT's kernel templates compile with NVRTC (no GPU needed) for sm_80
// and sm_90 over every distinct descriptor of the reference models, every
// op and every dtype, without register spills.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include "dispatcher/backends/jit/embedded_templates.hpp"
#include "dispatcher/backends/jit/jit_backend.hpp"
#include "dispatcher/backends/jit/jit_module_cache.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/backends/jit/nvrtc_compiler.hpp"
#include "dispatcher/backends/jit/pch_directory.hpp"
#include "dispatcher/cuda/cuda_driver.hpp"
#include "dispatcher/cuda/gpu_arch.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/models/model_table.hpp"
#include "support/reduced_run.hpp"
#include "support/test_templates.hpp"
#include "test_template_texts.hpp"

namespace convjit {
namespace {

TEST(JitTemplates, EmbeddedTextMatchesTheSourceTree) {
  std::set<std::string> names;
  for (const auto& t : embedded_templates()) {
    std::ifstream in(std::string(CONVJIT_TEMPLATE_DIR) + "/" + t.name);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str(), t.text) << t.name;
    names.insert(t.name);
  }
  // Every template in the tree is embedded, under its path below kernel_templates/.
  std::set<std::string> in_tree;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(CONVJIT_TEMPLATE_DIR))
    if (entry.path().extension() == ".cuh")
      in_tree.insert(
          std::filesystem::relative(entry.path(), CONVJIT_TEMPLATE_DIR).generic_string());
  EXPECT_EQ(names, in_tree);
  for (const char* expected :
       {"common/kernel_abi.cuh", "conv/conv_fwd.cuh", "conv/conv_bwddata.cuh",
        "conv/conv_bwdfilt.cuh", "conv/bias_grad.cuh", "pool/pool_fwd.cuh", "pool/pool_bwd.cuh"})
    EXPECT_TRUE(names.count(expected)) << expected;
  EXPECT_EQ(embedded_templates_hash().size(), 64u);
}

TEST(JitTemplates, PtxasStatisticsAreParsed) {
  const PtxasStats s = parse_ptxas_stats(
      "ptxas info    : Function properties for a\n"
      "ptxas         .     8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 0 barriers\n"
      "ptxas info    : Function properties for b\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 72 registers, used 1 barriers\n");
  EXPECT_EQ(s.max_registers, 72);
  EXPECT_EQ(s.spill_stores, 4);
  EXPECT_EQ(s.spill_loads, 12);
  EXPECT_EQ(s.stack_bytes, 8);
}

TEST(JitTemplates, F64AndSymbolicDescriptorsAreDeclined) {
  auto ops = expand_model(*find_model("resnet50"), {1, 32, false, DataType::f64}).value();
  EXPECT_EQ(jit_supports(ops[0].desc).code(), CONVJIT_STATUS_UNSUPPORTED);
  auto f32 = expand_model(*find_model("resnet50"), {1, 32}).value();
  EXPECT_TRUE(jit_supports(f32[0].desc).is_ok());
  EXPECT_FALSE(jit_supports(with_symbolic_batch(f32[0].desc)).is_ok());
}

// bf16's conversions (cvt.rn.bf16.f32) need sm_80: older targets are declined
// with the reason before NVRTC is asked, and an f16 kernel still compiles there.
TEST(JitTemplates, Bf16IsDeclinedBelowSm80WithTheReason) {
  const auto bf16 = expand_model(*find_model("resnet50"), {1, 32, false, DataType::bf16}).value();
  const Status old = jit_supports_arch(bf16[0].desc, "sm_75");
  EXPECT_EQ(old.code(), CONVJIT_STATUS_UNSUPPORTED);
  EXPECT_EQ(old.message(),
            "bf16 kernels need sm_80 or newer (cvt.rn.bf16.f32); sm_75 has no bf16 conversions");
  for (const char* arch : {"sm_80", "sm_86", "sm_90", "sm_90a", "sm_100"})
    EXPECT_TRUE(jit_supports_arch(bf16[0].desc, arch).is_ok()) << arch;
  const auto f16 = expand_model(*find_model("resnet50"), {1, 32, false, DataType::f16}).value();
  EXPECT_TRUE(jit_supports_arch(f16[0].desc, "sm_75").is_ok());

  const std::string dir = ::testing::TempDir() + "/convjit-jit-bf16";
  JitCache cache({dir});
  const auto declined = prepare_jit_module(cache, bf16[0].desc, "sm_75");
  EXPECT_EQ(declined.status().message(), old.message());
  EXPECT_TRUE(prepare_jit_module(cache, f16[0].desc, "sm_75").is_ok());
}

// NVRTC's precompiled headers go to <cache>/jit/pch/<pid>, not /tmp; a
// process's first compile removes the folders of processes that are gone.
TEST(JitPch, HeadersGoToTheCachePerProcessAndStaleFoldersAreRemoved) {
  namespace fs = std::filesystem;
  const fs::path cache = fs::path(::testing::TempDir()) / "convjit-jit-pch";
  fs::remove_all(cache);
  const fs::path root = cache / "jit" / "pch";
  fs::create_directories(root / "2147483646");  // beyond pid_max: a process that is gone
  fs::create_directories(root / "1");           // init: alive
  fs::create_directories(root / "notes");       // not a process's: left alone
  const std::string mine = pch_directory(cache.string());
  EXPECT_EQ(mine, (root / std::to_string(::getpid())).string());
  EXPECT_TRUE(fs::is_directory(mine));
  EXPECT_FALSE(fs::exists(root / "2147483646"));
  EXPECT_TRUE(fs::exists(root / "1"));
  EXPECT_TRUE(fs::exists(root / "notes"));
  EXPECT_EQ(pch_directory(""), "");

  // A compile with it: NVRTC says where it put the header, and the key's
  // options do not name the folder.
  auto ops = expand_model(*find_model("resnet50"), {1, 32}).value();
  auto compiled = compile_kernel(kernel_source(ops[0].desc).value(), "sm_90", "", mine);
  ASSERT_TRUE(compiled.is_ok()) << compiled.status().message();
  EXPECT_NE(compiled.value().log.find("creating precompiled header file \"" + mine + "/"),
            std::string::npos)
      << compiled.value().log;
  EXPECT_EQ(compiled.value().options, nvrtc_options("sm_90"));
  fs::remove_all(cache);
}

TEST(GpuArch, NumbersComeFromTheNameWithoutItsSuffix) {
  EXPECT_EQ(arch_number("sm_75"), 75);
  EXPECT_EQ(arch_number("sm_90a"), 90);
  EXPECT_EQ(arch_number("sm_100f"), 100);
  EXPECT_EQ(arch_number("compute_90"), 0);
  EXPECT_EQ(arch_number(""), 0);
}

TEST(JitTemplates, ACompileErrorCarriesTheLogAndTheSourcePath) {
  auto ops = expand_model(*find_model("resnet50"), {1, 32}).value();
  KernelSource broken = kernel_source(ops[0].desc, "direct").value();
  broken.source += "\nthis is not CUDA;\n";
  const std::string dir = ::testing::TempDir() + "/convjit-jit-failed";
  auto compiled = compile_kernel(broken, "sm_90", dir);
  ASSERT_FALSE(compiled.is_ok());
  const std::string message = compiled.status().message();
  EXPECT_NE(message.find("NVRTC could not compile conv/conv_fwd.cuh for sm_90"), std::string::npos)
      << message;
  EXPECT_NE(message.find("error"), std::string::npos) << message;
  const auto at = message.find(dir + "/failed-");
  ASSERT_NE(at, std::string::npos) << message;
  std::ifstream saved(message.substr(at, message.find(';', at) - at));
  std::stringstream text;
  text << saved.rdbuf();
  EXPECT_EQ(text.str(), broken.source);
}

TEST(JitBackend, ServesCudaDevicesOnlyAndSaysWhenTheDriverIsMissing) {
  auto ops = expand_model(*find_model("resnet50"), {1, 32}).value();
  JitBackend jit;
  const Status host = jit.check_support(ops[0].desc, {CONVJIT_DEVICE_HOST, 0});
  EXPECT_EQ(host.code(), CONVJIT_STATUS_NOT_AVAILABLE);
  EXPECT_NE(host.message().find("runs on CUDA devices"), std::string::npos);
  const Status cuda = jit.check_support(ops[0].desc, {CONVJIT_DEVICE_CUDA, 0});
  if (CudaDriver::instance().available().is_ok()) {
    EXPECT_TRUE(cuda.is_ok()) << cuda.message();
  } else {
    EXPECT_EQ(cuda.code(), CONVJIT_STATUS_NOT_AVAILABLE);
    EXPECT_TRUE(cuda.message().find("no CUDA driver") != std::string::npos ||
                cuda.message().find("sees no device") != std::string::npos)
        << cuda.message();
  }
}

// What makes a model op's module distinct.  BatchNorm and resize kernels
// take the shape as constants only: one module per template, variant and
// the descriptor's other fields (direction, flags, activation, mode) shows
// that they compile without spills, and the emulator tests run every shape.
std::string module_key(const OpDescriptor& d) {
  const std::string name = descriptor_name(d);
  if (!d.is_batchnorm() && !d.is_resize()) return name;
  auto source = kernel_source(d);
  EXPECT_TRUE(source.is_ok()) << source.status().message();
  const std::string direction = "_" + std::string(direction_name(d.direction));
  return fmt::format("{} {} {}", source.is_ok() ? source.value().template_name : "",
                     source.is_ok() ? source.value().variant : "",
                     name.substr(name.rfind(direction)));
}

// Distinct modules (module_key) of the reference models' training steps,
// at their usual sizes (ResNet-50 at batch 2), in `dtype`: convolutions,
// pools, bias gradients, BatchNorms and upsamples.
std::vector<OpDescriptor> model_descriptors(DataType dtype) {
  std::vector<OpDescriptor> descs;
  std::set<std::string> seen;
  const std::map<std::string, ModelOptions> models = {{"resnet50", {2, 224, false, dtype}},
                                                      {"yolo11n", {1, 640, false, dtype}},
                                                      {"cosmoflow", {1, 64, false, dtype}}};
  for (const auto& [name, options] : models) {
    auto ops = expand_model(*find_model(name), options);
    EXPECT_TRUE(ops.is_ok()) << ops.status().message();
    for (const auto& op : ops.value())
      if (jit_supports(op.desc).is_ok() && seen.insert(module_key(op.desc)).second)
        descs.push_back(op.desc);
  }
  return descs;
}

// Test template `name` compiled with NVRTC and ptxas for each of `archs`
// in each of its `modes` planted-bug modes.
void expect_test_template_compiles(std::string_view name, int modes,
                                   std::initializer_list<const char*> archs) {
  const std::string_view text = test::warp_test_template(name);
  ASSERT_FALSE(text.empty()) << name;
  for (int mode = 0; mode < modes; ++mode)
    for (const char* arch : archs) {
      KernelSource source;
      source.template_name = std::string(name);
      source.source = test::test_template_prelude(256, mode) + std::string(text);
      auto module = compile_kernel(source, arch);
      ASSERT_TRUE(module.is_ok()) << name << " mode " << mode << " for " << arch << "\n"
                                  << module.status().message();
    }
}

// The GPU side of the warp-level wrappers (common/warp.cuh, mma.cuh,
// ldmatrix.cuh, cp_async.cuh, vector_memory.cuh): the emulator's test
// templates, which use them all, compile with NVRTC and ptxas for sm_80
// and sm_90, their planted-bug modes included.
TEST(JitTemplates, TheWarpWrapperTestTemplatesCompileForTheGpu) {
  const std::pair<std::string_view, int> modes[] = {{"warp_shuffles.cuh", 3},
                                                    {"vector_memory.cuh", 3},
                                                    {"async_copy.cuh", 4},
                                                    {"warp_ldmatrix.cuh", 3},
                                                    {"warp_mma.cuh", 4}};
  ASSERT_EQ(std::size(test::kWarpTestTemplates), std::size(modes));
  for (const auto& [name, count] : modes)
    expect_test_template_compiles(name, count, {"sm_80", "sm_90"});
}

// The Hopper wrappers' test templates (common/mbarrier.cuh, common/tma.cuh,
// dynamic shared memory, common/warpgroup.cuh and common/cluster.cuh),
// every planted-bug mode, compile for sm_90a (and all but setmaxnreg and
// the multicast load for sm_90).
TEST(JitTemplates, TheHopperWrapperTestTemplatesCompileForSm90a) {
  const std::pair<std::string_view, int> modes[] = {{"mbarrier.cuh", 8},
                                                    {"tma.cuh", 20},
                                                    {"block_resources.cuh", 6},
                                                    {"wgmma.cuh", 15},
                                                    {"cluster.cuh", 8}};
  ASSERT_EQ(std::size(test::kHopperTestTemplates), std::size(modes));
  for (const auto& [name, count] : modes) {
    if (name == "block_resources.cuh" || name == "wgmma.cuh" || name == "cluster.cuh")
      expect_test_template_compiles(name, count, {"sm_90a"});
    else
      expect_test_template_compiles(name, count, {"sm_90", "sm_90a"});
  }
}

// The cluster wrappers (common/cluster.cuh) and the remote and multicast
// operations that take their addresses emit the cluster's instructions.
TEST(JitTemplates, TheClusterWrappersEmitTheClustersInstructions) {
  KernelSource source;
  source.template_name = "cluster.cuh";
  source.source =
      test::test_template_prelude(256, 0) + std::string(test::warp_test_template("cluster.cuh"));
  auto module = compile_kernel(source, "sm_90a");
  ASSERT_TRUE(module.is_ok()) << module.status().message();
  for (const char* instruction :
       {"%cluster_ctarank", "%cluster_nctarank", "barrier.cluster.arrive.release.aligned",
        "barrier.cluster.wait.acquire.aligned", "mapa.shared::cluster.u32",
        "mbarrier.arrive.release.cluster.shared::cluster.b64",
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        ".multicast::cluster"})
    EXPECT_NE(module.value().ptx.find(instruction), std::string::npos) << "no " << instruction;
  // Mode 8 reads another block's shared memory (distributed shared memory).
  source.source =
      test::test_template_prelude(256, 8) + std::string(test::warp_test_template("cluster.cuh"));
  auto reading = compile_kernel(source, "sm_90a");
  ASSERT_TRUE(reading.is_ok()) << reading.status().message();
  EXPECT_NE(reading.value().ptx.find("ld.shared::cluster.v2.b32"), std::string::npos);
}

// The wgmma wrappers emit the warpgroup instructions for each shape and type.
TEST(JitTemplates, TheWgmmaWrappersEmitWarpgroupMma) {
  const std::string_view text = test::warp_test_template("wgmma.cuh");
  ASSERT_FALSE(text.empty());
  struct Expected {
    int mode;
    const char* instruction;
    std::size_t accumulators;  // N / 2
  };
  const Expected expected[] = {{0, "wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16", 8},
                               {1, "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16", 32},
                               {3, "wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32", 4},
                               {4, "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16", 128}};
  for (const auto& [mode, instruction, accumulators] : expected) {
    KernelSource source;
    source.template_name = "wgmma.cuh";
    source.source = test::test_template_prelude(256, mode) + std::string(text);
    auto module = compile_kernel(source, "sm_90a");
    ASSERT_TRUE(module.is_ok()) << module.status().message();
    const std::string& ptx = module.value().ptx;
    const std::size_t at = ptx.find(instruction);
    ASSERT_NE(at, std::string::npos) << "mode " << mode;
    // Its accumulator list names N/2 distinct registers.
    const std::size_t open = ptx.find('{', at), close = ptx.find('}', open);
    std::set<std::string> registers;
    std::stringstream list(ptx.substr(open + 1, close - open - 1));
    for (std::string r; std::getline(list, r, ',');)
      registers.insert(r.substr(r.find_first_not_of(" \t\n")));
    EXPECT_EQ(registers.size(), accumulators) << "mode " << mode;
    for (const char* other : {"wgmma.fence.sync.aligned", "wgmma.commit_group.sync.aligned",
                              "wgmma.wait_group.sync.aligned 0"})
      EXPECT_NE(ptx.find(other), std::string::npos) << "mode " << mode << " lacks " << other;
    EXPECT_EQ(module.value().stats.spill_stores, 0) << "mode " << mode;
  }
}

// setmaxnreg needs the architecture-specific target: plain sm_90 refuses it.
TEST(JitTemplates, SetmaxnregCompilesForSm90aOnly) {
  const std::string_view text = test::warp_test_template("block_resources.cuh");
  ASSERT_FALSE(text.empty());
  KernelSource source;
  source.template_name = "block_resources.cuh";
  source.source = test::test_template_prelude(256, 0) + std::string(text);
  auto sm90a = compile_kernel(source, "sm_90a");
  ASSERT_TRUE(sm90a.is_ok()) << sm90a.status().message();
  EXPECT_NE(sm90a.value().ptx.find("setmaxnreg.inc.sync.aligned.u32 232"), std::string::npos);
  EXPECT_NE(sm90a.value().ptx.find("setmaxnreg.dec.sync.aligned.u32 40"), std::string::npos);
  EXPECT_FALSE(compile_kernel(source, "sm_90").is_ok());
}

// The TMA wrappers emit the copy engine's instructions, not a fallback.
TEST(JitTemplates, TheTmaWrappersEmitBulkTensorCopies) {
  const std::string_view text = test::warp_test_template("tma.cuh");
  ASSERT_FALSE(text.empty());
  const std::pair<int, std::vector<const char*>> expected[] = {
      {0, {"cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes",
           "mbarrier.arrive.expect_tx"}},
      {5, {"cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"}},
      {18, {"cp.async.bulk.tensor.5d.shared::cluster.global.im2col"}},
      {7, {"cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", "cp.async.bulk.commit_group",
           "cp.async.bulk.wait_group.read 0", "fence.proxy.async.shared::cta"}}};
  for (const auto& [mode, instructions] : expected) {
    KernelSource source;
    source.template_name = "tma.cuh";
    source.source = test::test_template_prelude(256, mode) + std::string(text);
    auto module = compile_kernel(source, "sm_90a");
    ASSERT_TRUE(module.is_ok()) << module.status().message();
    for (const char* instruction : instructions)
      EXPECT_NE(module.value().ptx.find(instruction), std::string::npos)
          << "mode " << mode << " lacks " << instruction;
  }
}

class JitCompileModels : public ::testing::TestWithParam<std::tuple<const char*, DataType>> {};

// The three dtypes share the layer list: each arch compiles a layer in one
// of them in turn, and each dtype a third of the layers on one arch and
// another third on the other, so every layer compiles on both archs at a
// third of the NVRTC time of all six pairs (12 minutes on CI's 2 cores).
TEST_P(JitCompileModels, EveryDistinctLayerCompilesWithoutSpillsInTurn) {
  const auto [arch, dtype] = GetParam();
  const std::size_t turn = (static_cast<std::size_t>(dtype) + (arch == std::string("sm_90"))) % 3;
  int compiled = 0;
  const std::vector<OpDescriptor> layers = test::sweep(model_descriptors(dtype));
  for (std::size_t i = turn; i < layers.size(); i += 3) {
    const OpDescriptor& desc = layers[i];
    auto source = kernel_source(desc);
    ASSERT_TRUE(source.is_ok()) << source.status().message();
    auto module = compile_kernel(source.value(), arch);
    ASSERT_TRUE(module.is_ok()) << descriptor_name(desc) << "\n" << module.status().message();
    EXPECT_EQ(module.value().stats.spill_stores + module.value().stats.spill_loads, 0)
        << descriptor_name(desc) << "\n"
        << module.value().log;
    EXPECT_GT(module.value().stats.max_registers, 0) << module.value().log;
    ++compiled;
  }
  EXPECT_GT(compiled, test::reduced_run() ? 10 : 40);
  RecordProperty("compiled", compiled);
  std::printf("%d modules compiled for %s\n", compiled, arch);
}

INSTANTIATE_TEST_SUITE_P(ArchDtype, JitCompileModels,
                         ::testing::Combine(::testing::Values("sm_80", "sm_90"),
                                            ::testing::Values(DataType::f32, DataType::f16,
                                                              DataType::bf16)),
                         [](const auto& param_info) {
                           return std::string(std::get<0>(param_info.param)) + "_" +
                                  std::string(dtype_name(std::get<1>(param_info.param)));
                         });

}  // namespace
}  // namespace convjit
