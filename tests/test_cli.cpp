// The convjit CLI driven as a user would: spawn the binary, check its
// output and exit codes (0 ok, 1 runtime failure, 2 usage).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/reduced_run.hpp"
#include "support/spawned_process.hpp"

namespace {

using convjit::test::Outcome;

Outcome convjit_with_env(const std::string& env, const std::string& args) {
  return convjit::test::spawn(env + std::string(CONVJIT_CLI_PATH) + " " + args);
}

Outcome convjit(const std::string& args) { return convjit_with_env("", args); }

// `pattern` with its "{}" replaced by `n`.
std::string fmt_count(std::string pattern, std::size_t n) {
  return pattern.replace(pattern.find("{}"), 2, std::to_string(n));
}

// The backend `auto` serves the host with: oneDNN where the CLI loads it
// (as `doctor` reports), else the reference.
const std::string& host_backend() {
  static const std::string backend = [] {
    const auto doctor = nlohmann::json::parse(convjit("doctor --json").output);
    return doctor["onednn"]["loaded"].get<bool>() ? "onednn" : "reference";
  }();
  return backend;
}

constexpr const char* kCosmoFlowName =
    "conv3d_2_4_66_512_512_69206016_17301504_262144_512_1_32_4_3_3_3_2_32_64_512_512_553648128_"
    "17301504_262144_512_1_0_1_1_1_1_1_1_1_1_1_fwd";

TEST(Cli, DescribePrintsTheCosmoFlowNameFromDesignDoc) {
  const Outcome r = convjit(
      "describe conv --x 2,4,66,512,512 --x-strides 69206016,17301504,262144,512,1 --w 32,4,3,3,3 "
      "--y-strides 553648128,17301504,262144,512,1 --pad 0,1,1 --op fwd");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.first_line(), kCosmoFlowName);
}

TEST(Cli, DescribePrintsTheResNetStemName) {
  const Outcome r = convjit("describe conv --x 32,3,224,224 --w 64,3,7,7 --stride 2,2 --pad 3,3");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(
      r.first_line(),
      "conv2d_32_3_224_224_0_150528_50176_224_1_0_64_3_7_7_0_32_64_112_112_0_802816_12544_112_"
      "1_0_3_3_0_2_2_0_1_1_0_1_fwd");
}

TEST(Cli, DescribeNameParsesAndItsFlagsLineReproducesTheName) {
  for (const std::string& name :
       {std::string(kCosmoFlowName),
        std::string(
            "conv2d_1_6_9_8_0_432_1_48_6_0_4_3_3_2_0_1_4_5_3_0_60_1_12_4_0_2_0_0_2_3_0_1_1_0_2_"
            "bwdfilt_pe_0_1_0_bf16"),
        std::string(
            "conv3d_1_4_10_10_10_4000_1000_100_10_1_8_4_3_3_3_1_8_10_10_10_8000_1000_100_10_1_"
            "2_1_1_1_1_1_2_1_1_1_bwddata_f16"),
        std::string("avgpadpool1d_2_3_9_0_0_27_9_1_0_0_3_0_0_2_3_5_0_0_15_5_1_0_0_1_0_0_2_0_0_1_0_"
                    "0_bwd"),
        std::string("conv2d_32_3_224_224_0_150528_50176_224_1_0_64_3_7_7_0_32_64_112_112_0_802816_"
                    "12544_112_1_0_3_3_0_2_2_0_1_1_0_1_fwd_ep_silu_bias_res_bf16"),
        std::string("batchnorm2d_2_3_4_5_0_60_1_15_3_0_2_3_4_5_0_60_20_5_1_0_bwd_noshift_grads_dx_"
                    "dscale_ep_silu_bf16"),
        std::string("batchnorm1d_3_4_7_0_0_28_7_1_0_0_3_4_7_0_0_28_7_1_0_0_fwd_inference_noscale"),
        std::string("resize3d_1_2_3_4_5_120_60_20_5_1_1_2_6_8_10_960_480_80_10_1_linear_align-"
                    "corners_fwd_sc_2_2_2_f16"),
        std::string("resize1d_2_3_7_0_0_21_7_1_0_0_2_3_3_0_0_9_3_1_0_0_nearest-round-prefer-floor_"
                    "tf-half-pixel-for-nn_bwd")}) {
    const Outcome described = convjit("describe --name " + name);
    ASSERT_EQ(described.exit_code, 0) << described.output;
    EXPECT_EQ(described.first_line(), name);
    const std::string flags = described.line_starting("flags");
    ASSERT_FALSE(flags.empty()) << described.output;
    const Outcome again = convjit("describe " + flags.substr(flags.find_first_not_of(' ', 5)));
    EXPECT_EQ(again.exit_code, 0) << again.output;
    EXPECT_EQ(again.first_line(), name) << flags;
  }
}

TEST(Cli, SymbolicBatchAndPoolCeilMode) {
  const Outcome r = convjit(
      "describe pool --x 1,64,112,112 --window 3,3 --stride 2,2 --pad 1,1 --ceil --symbolic-batch");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(
      r.first_line(),
      "maxpool2d_B_64_112_112_0_802816_12544_112_1_0_3_3_0_B_64_57_57_0_207936_3249_57_1_0_1_1_"
      "0_2_2_0_1_1_0_fwd");
}

TEST(Cli, UsageErrorsExitTwoAndNameTheFlag) {
  struct Case {
    const char* args;
    const char* fragment;
  };
  for (const Case& c : {
           Case{"describe conv --x 1,2,8,8 --w 4,2,3", "--w needs 4 comma-separated values"},
           Case{"describe conv --x 1,2 --w 4,2,3", "--x needs 3 to 5 comma-separated values"},
           Case{"describe conv --x 1,2,8,8 --w 4,2,3,3 --stride 2", "--stride needs 2"},
           Case{"describe conv --x 1,2,8,8 --w 4,2,3,3 --pad 1,1 --pad-begin 1,1",
                "--pad excludes --pad-begin"},
           Case{"describe conv --x 1,2,8,8 --w 4,2,3,3 --groups abc", "--groups"},
           Case{"describe conv --x 1,4,8,8 --w 4,2,3,3 --groups 3", "groups = 3 does not divide"},
           Case{"describe conv --x 1,2,8,8 --w 4,2,3,3 --dtype f8", "--dtype"},
           Case{"describe conv --x 1,2,8,8 --w 4,2,3,3 --op sideways", "--op"},
           Case{"describe conv --x 1,2,8,8 --w 4,2,3,3 --bogus", "--bogus"},
           Case{"describe --name conv2d_1_x", "token 3 'x'"},
           Case{"describe", "name an operation"},
           Case{"", "A subcommand is required"},
       }) {
    const Outcome r = convjit(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.fragment), std::string::npos) << c.args << "\n" << r.output;
  }
}

TEST(Cli, HelpAndVersionExitZero) {
  EXPECT_EQ(convjit("--help").exit_code, 0);
  const Outcome describe_help = convjit("describe --help");
  EXPECT_EQ(describe_help.exit_code, 0);
  EXPECT_NE(describe_help.output.find("Examples:"), std::string::npos);
  const Outcome version = convjit("--version");
  EXPECT_EQ(version.exit_code, 0);
  EXPECT_NE(version.output.find(CONVJIT_VERSION), std::string::npos) << version.output;
}

TEST(Cli, RunExecutesEveryLayerForwardAndBackwardOnTheHost) {
  const Outcome r = convjit("run --batch 1 --imgsz 16 --layout nhwc");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int calls = 0;
  std::istringstream in(r.output);
  for (std::string line; std::getline(in, line);)
    if (line.find(" " + host_backend() + " ") != std::string::npos) ++calls;
  EXPECT_EQ(calls, 20) << r.output;  // 6 fwd, 2 pool bwd, 4 convs x 3 backward
  EXPECT_NE(r.output.find("conv3_dw      fwd      " + host_backend()), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("maxpool2d_1_16_16_16_0_4096_1_256_16_0_3_3_0_1_16_8_8_0_1024_1_128_16_0_"
                          "1_1_0_2_2_0_1_1_0_bwd"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("20 calls"), std::string::npos);
}

// YOLO11n's forward convs as fused Conv+BN+SiLU blocks (the detect
// head's outputs fuse their bias alone); a model without a block
// activation, or an epilogue on a backward, is a usage error.
TEST(Cli, RunFusedRunsYoloConvBlocksWithTheirEpilogues) {
  const Outcome r = convjit("run --model yolo11n --imgsz 32 --fused --verify");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("b0.conv                  fwd      " + host_backend()),
            std::string::npos);
  EXPECT_NE(r.output.find("_fwd_ep_silu_bias\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("_fwd_ep_identity_bias\n"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("_bwddata_ep"), std::string::npos) << r.output;
  const Outcome resnet = convjit("run --model resnet50 --imgsz 32 --fused");
  EXPECT_EQ(resnet.exit_code, 2) << resnet.output;
  EXPECT_NE(resnet.output.find("model resnet50 has no fused form"), std::string::npos)
      << resnet.output;
  const Outcome bwd = convjit("describe conv --x 1,4,8,8 --w 4,4,3,3 --op bwddata --act relu");
  EXPECT_EQ(bwd.exit_code, 2) << bwd.output;
  EXPECT_NE(bwd.output.find("into --op fwd only, not --op bwddata"), std::string::npos)
      << bwd.output;
}

TEST(Cli, RunOfTheTinyNetworkAsJson) {
  const Outcome r = convjit("run --batch 1 --imgsz 8 --passes 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["network"], "tiny");
  EXPECT_EQ(j["image_size"], 8);
  ASSERT_EQ(j["passes"].size(), 2u);
  for (const auto& pass : j["passes"]) {
    EXPECT_EQ(pass["call_count"], 20);
    ASSERT_EQ(pass["calls"].size(), 20u);
    EXPECT_EQ(pass["calls"][0]["layer"], "conv1");
    EXPECT_EQ(pass["calls"][0]["op"], "fwd");
    EXPECT_EQ(pass["calls"][0]["backend"], host_backend());
    EXPECT_GE(pass["calls"][0]["ms"].get<double>(), 0.0);
  }
}

// ---- the kernel emulator ---------------------------------------------------------

TEST(CliEmulate, RunsOneOperationsKernelsAndReportsTheLaunchAndTheError) {
  const Outcome r =
      convjit("emulate conv --x 2,8,9,9 --w 16,8,3,3 --pad 1,1 --op bwdfilt --dtype f16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.line_starting("template"), "template  conv/conv_bwdfilt.cuh (f16)");
  EXPECT_EQ(r.line_starting("launch    convjit_kernel_finish"),
            "launch    convjit_kernel_finish: 5 blocks x 256 threads");  // 1152 weights
  EXPECT_NE(r.line_starting("checks").find("clean"), std::string::npos) << r.output;
  EXPECT_EQ(r.line_starting("result"), "result    pass");
}

TEST(CliEmulate, JsonAndDescriptorNames) {
  const Outcome named = convjit(
      "emulate --json --name "
      "avgpool2d_1_4_7_7_0_196_49_7_1_0_3_3_0_1_4_3_3_0_36_9_3_1_0_0_0_0_2_2_0_1_1_0_fwd");
  ASSERT_EQ(named.exit_code, 0) << named.output;
  const auto j = nlohmann::json::parse(named.output);
  EXPECT_EQ(j["template"], "pool/pool_fwd_tile.cuh");
  EXPECT_EQ(j["launches"][0]["blocks"], 4);  // a tile per (batch, channel) plane
  EXPECT_TRUE(j["passed"].get<bool>());
  EXPECT_LE(j["max_error"].get<double>(), j["tolerance"].get<double>());
}

TEST(CliEmulate, AnOperationTheJitDoesNotServeIsARuntimeError) {
  const Outcome r = convjit("emulate conv --x 1,2,5,5 --w 2,2,3,3 --dtype f64");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("f64 is served by the host reference only"), std::string::npos);
}

TEST(CliEmulate, ThePolicyRoutesEveryHostCallThroughTheEmulator) {
  const Outcome r = convjit_with_env("CONVJIT_POLICY=emulate ", "run --batch 1 --imgsz 8");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("conv3_dw      fwd      emulator"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find(" reference "), std::string::npos) << r.output;
  // A whole model's step: in the plain pass, not again under the sanitizers.
  if (convjit::test::reduced_run()) return;
  const Outcome model = convjit_with_env("CONVJIT_POLICY=emulate ",
                                         "run --model yolo11n --imgsz 32 --reps 0 --verify --json");
  ASSERT_EQ(model.exit_code, 0) << model.output;
  // Kept in a variable: a range-for over a temporary's member would outlive it.
  const nlohmann::json report = nlohmann::json::parse(model.output);
  int norms = 0, resizes = 0;
  for (const auto& op : report["ops"]) {
    const std::string name = op["descriptor"];
    norms += name.starts_with("batchnorm") ? 1 : 0;
    resizes += name.starts_with("resize") ? 1 : 0;
    EXPECT_EQ(op["backend"], "emulator") << op.dump();
    EXPECT_LE(op["max_error"].get<double>(), 1e-4) << op.dump();  // f32's (tolerance.hpp)
  }
  // Every op of the step, its BatchNorms and upsamples included.
  EXPECT_GT(norms, 20);
  EXPECT_EQ(resizes, 4);
}

// ---- tuned libraries through the CLI -------------------------------------------

// A private cache directory for one test.
struct TempCache {
  std::string dir;
  TempCache() {
    std::string pattern = "/tmp/convjit-cli-XXXXXX";
    dir = ::mkdtemp(pattern.data()) ? pattern : "";
  }
  ~TempCache() {
    if (!dir.empty()) std::filesystem::remove_all(dir);
  }
  std::string install(const std::string& library, const std::string& name) const {
    const std::string target = dir + "/lib" + name + ".so";
    std::filesystem::copy_file(std::string(CONVJIT_TEST_LIBRARY_DIR) + "/lib" + library + ".so",
                               target);
    return target;
  }
  // The local tier inside too, so that no test reads another's entries.
  std::string env() const {
    return "CONVJIT_CACHE_PATH=" + dir + " CONVJIT_LOCAL_CACHE_PATH=" + dir + "/local ";
  }
};

constexpr const char* kRunConv1 =
    "conv2d_1_3_8_8_0_192_64_8_1_0_16_3_3_3_0_1_16_8_8_0_1024_64_8_1_0_1_1_0_1_1_0_1_1_0_1_fwd";

TEST(CliTuned, DescribeListsTheFilesItWouldProbe) {
  TempCache cache;
  const Outcome r = convjit_with_env(cache.env(), "describe --name " + std::string(kRunConv1));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("probes    " + cache.dir + "/lib" + kRunConv1 + ".so\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("probes    " + cache.dir + "/libconv2d_B_3_8_8_"), std::string::npos);
}

TEST(CliTuned, QueryShowsEveryProbeAndTheResult) {
  TempCache cache;
  const std::string args = "query --name " + std::string(kRunConv1);
  Outcome r = convjit_with_env(cache.env(), args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("cache     " + cache.dir + "  [env CONVJIT_CACHE_PATH]"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find(".so: not found"), std::string::npos);
  EXPECT_NE(r.output.find("result    " + host_backend() + " (host)"), std::string::npos)
      << r.output;

  const std::string path = cache.install("dace_fwd", kRunConv1);
  r = convjit_with_env(cache.env(), args);
  EXPECT_NE(r.output.find("probe     " + path + ": would load"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("result    tuned-library: " + path), std::string::npos);
  r = convjit_with_env(cache.env(), args + " --load");
  EXPECT_NE(r.output.find(path + ": loaded (DaCe ABI)"), std::string::npos) << r.output;

  std::filesystem::permissions(path, std::filesystem::perms::others_write,
                               std::filesystem::perm_options::add);
  r = convjit_with_env(cache.env(), args);
  EXPECT_NE(r.output.find(path + ": rejected: refusing to load from file"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("result    " + host_backend() + " (host)"), std::string::npos)
      << r.output;
}

TEST(CliTuned, RunUsesATunedLibraryFromTheCachePath) {
  TempCache cache;
  const Outcome plain = convjit_with_env(cache.env(), "run --batch 1 --imgsz 8");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(plain.output.find("tuned-library"), std::string::npos);
  cache.install("dace_fwd", kRunConv1);
  const Outcome tuned = convjit_with_env(cache.env(), "run --batch 1 --imgsz 8");
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  EXPECT_NE(tuned.output.find("conv1         fwd      tuned-library"), std::string::npos)
      << tuned.output;
  const Outcome passes =
      convjit_with_env(cache.env(), "run --batch 1 --imgsz 8 --passes 2 --rescan");
  ASSERT_EQ(passes.exit_code, 0) << passes.output;
  EXPECT_NE(passes.output.find("pass 2\n"), std::string::npos);
  // Each pass reports its own 20 calls.
  EXPECT_NE(passes.output.find("20 calls"), passes.output.rfind("20 calls")) << passes.output;
}

// Rules name tuned libraries by path: one forced from outside the cache
// path (the other convs, with no library there, fall back to the chain),
// and one in the cache path denied.
TEST(CliTuned, RulesForceALibraryFromElsewhereAndDenyOneInTheCachePath) {
  TempCache cache, elsewhere;
  elsewhere.install("dace_fwd", kRunConv1);
  const std::string rules = cache.dir + "/rules.json";
  std::ofstream(rules) << R"({"version": 1, "rules": [{"id": "mine", "match": {"op": "conv",
      "dir": "fwd"}, "force": {"library": ")" +
                              elsewhere.dir + R"(/lib{descriptor}.so"},
      "on_unavailable": "fallback"}]})";
  Outcome r =
      convjit_with_env(cache.env() + "CONVJIT_RULES=" + rules + " ", "run --batch 1 --imgsz 8");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("conv1         fwd      tuned-library"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("tuned-library"), r.output.rfind("tuned-library")) << r.output;

  const std::string path = cache.install("dace_fwd", kRunConv1);
  std::ofstream(rules) << R"({"version": 1, "rules": [{"id": "not-that", "match": {},
      "deny": {"library": ")" +
                              path + R"("}}]})";
  r = convjit_with_env(cache.env() + "CONVJIT_RULES=" + rules + " ", "run --batch 1 --imgsz 8");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("tuned-library"), std::string::npos) << r.output;
  // Without the rule, the cache's library serves conv1 again.
  r = convjit_with_env(cache.env(), "run --batch 1 --imgsz 8");
  EXPECT_NE(r.output.find("conv1         fwd      tuned-library"), std::string::npos) << r.output;
}

TEST(CliTuned, VerboseLogAndInvalidSettingsAreReported) {
  TempCache cache;
  Outcome r = convjit_with_env(cache.env() + "CONVJIT_VERBOSE=1 ", "run --batch 1 --imgsz 8");
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("convjit_verbose,v1,template,event,descriptor"), std::string::npos);
  EXPECT_NE(r.output.find(std::string("convjit_verbose,v1,decide,") + kRunConv1),
            std::string::npos);
  r = convjit_with_env("CONVJIT_VERBOSE=yes DISTCONV_JIT_VERBOSE=0 ", "run --batch 1 --imgsz 8");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find("convjit: warning: CONVJIT_VERBOSE='yes' is not 0, 1 or 2; ignored"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("convjit_verbose"), std::string::npos);
  r = convjit_with_env("DISTCONV_JIT_VERBOSE=0 ", "run --batch 1 --imgsz 8");
  EXPECT_EQ(r.output.find("convjit_verbose"), std::string::npos);  // 0 means off, unlike LBANN
}

// ---- models and preload ------------------------------------------------------------

TEST(CliModels, ListsTheBuiltinTablesAndExpandsOne) {
  const Outcome list = convjit("models");
  ASSERT_EQ(list.exit_code, 0) << list.output;
  for (const char* name : {"resnet50 ", "yolo11n ", "cosmoflow "})
    EXPECT_NE(list.output.find(name), std::string::npos) << list.output;
  const Outcome resnet = convjit("models --model resnet50 --batch 32");
  ASSERT_EQ(resnet.exit_code, 0);
  EXPECT_NE(resnet.output.find(
                "conv2d_32_3_224_224_0_150528_50176_224_1_0_64_3_7_7_0_32_64_112_112_0_802816_"),
            std::string::npos);
  // K R S C filters: the stem's w (64 x 3 x 7 x 7) with channels contiguous.
  const Outcome krsc =
      convjit("models --model resnet50 --batch 32 --layout nhwc --filter-layout krsc --json");
  ASSERT_EQ(krsc.exit_code, 0) << krsc.output;
  const auto stem = nlohmann::json::parse(krsc.output).at(0);
  EXPECT_EQ(stem["layer"], "stem.conv");
  EXPECT_EQ(stem["w_strides"], nlohmann::json({147, 1, 21, 3})) << stem.dump();
  const Outcome kcrs = convjit("models --model resnet50 --json");
  EXPECT_EQ(nlohmann::json::parse(kcrs.output).at(0)["w_strides"], nlohmann::json({147, 49, 7, 1}));
  const Outcome bad = convjit("models --model resnet50 --filter-layout rsck");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--filter-layout"), std::string::npos) << bad.output;
  const Outcome unknown = convjit("models --model vgg16");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_NE(unknown.output.find(
                "--model vgg16: unknown model; the built-in ones are resnet50, yolo11n, cosmoflow"),
            std::string::npos)
      << unknown.output;
}

TEST(CliPreload, CompilesAModelIntoTheCacheThenFindsItCached) {
  TempCache cache;
  const std::string args = "preload --model cosmoflow --imgsz 32 --arch sm_80 --jobs 2";
  const Outcome cold = convjit_with_env(cache.env(), args);
  ASSERT_EQ(cold.exit_code, 0) << cold.output;
  EXPECT_NE(cold.output.find("preload: 24 descriptors for sm_80 in"), std::string::npos)
      << cold.output;
  EXPECT_NE(cold.output.find(": 24 compiled, 0 already cached, 0 unsupported, 0 failed"),
            std::string::npos);
  EXPECT_TRUE(std::filesystem::exists(cache.dir + "/jit/v1"));
  const Outcome warm = convjit_with_env(cache.env(), args);
  EXPECT_NE(warm.output.find(": 0 compiled, 24 already cached, 0 unsupported, 0 failed"),
            std::string::npos)
      << warm.output;
  const Outcome f64 = convjit_with_env(
      cache.env(), "preload --model cosmoflow --imgsz 32 --arch sm_80 --dtype f64");
  EXPECT_NE(f64.output.find(": 0 compiled, 0 already cached, 24 unsupported, 0 failed"),
            std::string::npos)
      << f64.output;
}

TEST(CliPreload, ReadsARecordFileAndReportsBadLines) {
  TempCache cache;
  const std::string record = cache.dir + "/record.jsonl";
  {
    std::ofstream out(record);
    out << R"({"name":"conv2d_1_2_5_5_0_50_25_5_1_0_3_2_3_3_0_1_3_5_5_0_75_25_5_1_0_1_1_0_1_1_0_1_1_0_1_fwd"})"
        << "\n";
    out << R"({"name":"conv2d_1_2_5_5_0_50_25_5_1_0_3_2_3_3_0_1_3_5_5_0_75_25_5_1_0_1_1_0_1_1_0_1_1_0_1_fwd"})"
        << "\n";
    out << "not json\n";
  }
  const Outcome r = convjit_with_env("CONVJIT_ARCH=sm_90 " + cache.env(), "preload " + record);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("preload: 1 descriptors for sm_90"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(": 1 compiled, 0 already cached, 0 unsupported, 1 failed"),
            std::string::npos);
  EXPECT_NE(r.output.find("record.jsonl:3: not a JSON object with a \"name\""), std::string::npos)
      << r.output;
}

TEST(CliPreload, UsageAndEnvironmentErrors) {
  TempCache cache;
  Outcome r = convjit_with_env(cache.env(), "preload --model yolo11n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("pass --arch sm_XX"), std::string::npos) << r.output;
  r = convjit_with_env(cache.env(), "preload --model yolo11n --arch gfx90a");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--arch gfx90a is not of the form sm_XX"), std::string::npos);
  r = convjit_with_env(cache.env(), "preload --arch sm_90");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("give either a record file or --model NAME"), std::string::npos);
  r = convjit_with_env(cache.env(), "preload /nonexistent/record.jsonl --arch sm_90");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("cannot read the record file /nonexistent/record.jsonl"),
            std::string::npos);
  r = convjit_with_env("CONVJIT_CACHE_PATH=/proc/convjit-no ",
                       "preload --model cosmoflow --imgsz 32 --arch sm_90");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("no writable cache directory in /proc/convjit-no"), std::string::npos)
      << r.output;
  // Issue 15, item 7: a directory was read as a record of 0 descriptors (exit 0).
  r = convjit_with_env(cache.env(), "preload " + cache.dir + " --arch sm_90");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find(cache.dir + " is a directory; pass a record file"), std::string::npos)
      << r.output;
  std::ofstream(cache.dir + "/empty.jsonl").flush();
  r = convjit_with_env(cache.env(), "preload " + cache.dir + "/empty.jsonl --arch sm_90");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("empty.jsonl is empty; run the trainer with CONVJIT_RECORD="),
            std::string::npos)
      << r.output;
}

// Issue 15, item 7: integer flags are read strictly.  Each of these used to
// become another number (or drop an item) without a word.
TEST(CliFlags, IntegersAreDecimalInRangeAndListsHaveNoEmptyItems) {
  const std::string conv = "describe conv --x 1,2,8,8 --w 4,2,3,3 ";
  const struct {
    std::string args, message;
  } cases[] = {
      {conv + "--pad 1,,1", "--pad: '1,,1' has an empty item at position 2"},
      {"describe conv --x 2,3,,8,8 --w 4,3,3,3", "--x: '2,3,,8,8' has an empty item at position 3"},
      {conv + "--pad 1,1,", "has an empty item at position 3"},
      {conv + "--groups 99999999999999999999",
       "--groups: 99999999999999999999 is out of range: use an integer that fits in 64 bits"},
      {"describe conv --x 0x10,2,8,8 --w 4,2,3,3", "--x: '0x10' is not a decimal integer"},
      {conv + "--stride 1e1,1", "--stride: '1e1' is not a decimal integer"},
      {"cache gc --max-bytes 0", "--max-bytes: 0 is out of range: use an integer of at least 1"},
      {"cache gc --max-bytes abc", "--max-bytes: 'abc' is not a decimal integer"},
      {"run --batch 0", "--batch: 0 is out of range: use an integer from 1 to 1048576"},
  };
  for (const auto& c : cases) {
    const Outcome r = convjit(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.message), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_LT(r.output.size(), 200u) << r.output;  // no 300-digit ranges
  }
  const Outcome ok = convjit(conv + "--pad -0,1 --groups 1");
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
}

// Issue 15, item 7: w has no batch, so a symbolic name keeps its K.
TEST(CliDescribe, ASymbolicNameShowsOnlyTheBatchesAsB) {
  const Outcome r = convjit(
      "describe --name "
      "conv2d_B_2_8_8_0_128_64_8_1_0_4_2_3_3_0_B_4_8_8_0_256_64_8_1_0_1_1_0_1_1_0_1_1_0_1_fwd");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("x         shape [B, 2, 8, 8]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("w         shape [4, 2, 3, 3]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("y         shape [B, 4, 8, 8]"), std::string::npos) << r.output;
}

TEST(CliDoctor, ReportsToolchainCacheAndSettingsWithTheirSources) {
  TempCache cache;
  Outcome r = convjit_with_env(cache.env() + "CONVJIT_VERBOSE=1 ", "doctor");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("NVRTC          13."), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("cache dir      " + cache.dir + ": mode 0700, writable"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("[env CONVJIT_CACHE_PATH]"), std::string::npos);
  EXPECT_NE(r.output.find("verbose      = 1"), std::string::npos);
  EXPECT_NE(r.output.find("policy       = \"auto\"                                   [default]"),
            std::string::npos)
      << r.output;
  r = convjit_with_env(cache.env(), "doctor --json");
  ASSERT_EQ(r.exit_code, 0);
  const auto report = nlohmann::json::parse(r.output);
  EXPECT_EQ(report["settings"]["cache_path"]["source"], "env");
  EXPECT_TRUE(report.contains("cuda_driver"));
  // Issue 15, item 8: a regular file on the cache path is no read-only directory.
  const std::string file = cache.dir + "/a-file";
  std::ofstream(file) << "x";
  r = convjit_with_env("CONVJIT_CACHE_PATH=" + file + ":" + cache.dir + " ", "doctor");
  EXPECT_NE(r.output.find("cache dir      " + file +
                          ": not a directory; remove the file or change CONVJIT_CACHE_PATH"),
            std::string::npos)
      << r.output;
}

TEST(CliDoctor, NamesTheFileEachRuntimeLibraryCameFromAndWhereItLooked) {
  Outcome r = convjit("doctor --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto report = nlohmann::json::parse(r.output);
  for (const char* library : {"nvrtc", "cudnn"}) {
    const auto& entry = report[library];
    ASSERT_TRUE(entry["loaded"].get<bool>()) << entry.dump();  // the toolkit has both
    EXPECT_TRUE(std::filesystem::exists(entry["path"].get<std::string>())) << entry.dump();
    EXPECT_FALSE(entry["found_by"].get<std::string>().empty());
  }
  r = convjit("doctor");
  EXPECT_NE(r.output.find("NVRTC          13."), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(" from " + report["nvrtc"]["path"].get<std::string>()), std::string::npos)
      << r.output;

  // A wrong setting: every place looked at (here the one) and the fix.
  r = convjit_with_env("CONVJIT_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.13 ", "doctor");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("NVRTC          not available; looked in:\n"
                          "                 CONVJIT_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.13: "
                          "/nonexistent/libnvrtc.so.13: cannot open shared object file"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("to fix: point CONVJIT_NVRTC_LIBRARY at libnvrtc.so.13"),
            std::string::npos)
      << r.output;
  r = convjit_with_env("CONVJIT_CUDNN_LIBRARY=/nonexistent ", "doctor --json");
  report = nlohmann::json::parse(r.output);
  EXPECT_FALSE(report["cudnn"]["loaded"].get<bool>());
  EXPECT_NE(report["cudnn"]["error"].get<std::string>().find("CONVJIT_CUDNN_LIBRARY=/nonexistent"),
            std::string::npos);
}

// Without NVRTC the JIT cannot compile: preload says why once; the host path
// works as before.
TEST(CliNvrtc, WithoutItPreloadFailsOnceWithTheReasonAndTheHostPathRuns) {
  TempCache cache;
  const std::string env = cache.env() + "CONVJIT_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.13 ";
  Outcome r = convjit_with_env(env, "preload --model yolo11n --arch sm_90");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.first_line(),
            "convjit preload: error: CONVJIT_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.13: "
            "/nonexistent/libnvrtc.so.13: cannot open shared object file: No such file or "
            "directory; point CONVJIT_NVRTC_LIBRARY at libnvrtc.so.13 (NVRTC 12.8 or later, major "
            "12 or 13) or the directory holding it, or unset it to search the usual places")
      << r.output;
  EXPECT_EQ(r.output.find("failed:"), std::string::npos) << r.output;
  r = convjit_with_env(env, "run --model resnet50 --imgsz 32 --reps 0 --verify");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(CliRunModel, RunsEveryOpWithBackendTimesAndVerification) {
  const Outcome r = convjit("run --model resnet50 --imgsz 32 --reps 0 --verify --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto report = nlohmann::json::parse(r.output);
  EXPECT_EQ(report["model"], "resnet50");
  ASSERT_EQ(report["ops"].size(), 92u);  // 72 convs and pools, 20 distinct BatchNorms
  for (const auto& op : report["ops"]) {
    EXPECT_EQ(op["backend"], host_backend());
    EXPECT_LE(op["max_error"].get<double>(), 1e-4) << op.dump();  // f32's (tolerance.hpp)
    EXPECT_GE(op["first_ms"].get<double>(), 0.0);
  }
  const Outcome text = convjit("run --model cosmoflow --imgsz 32 --reps 1");
  EXPECT_NE(text.output.find("cosmoflow: 24 distinct ops on host"), std::string::npos)
      << text.output;
}

// Without a GPU, bench times oneDNN (where it loads) and the reference;
// the work figures are checked against hand-worked counts.
TEST(CliBench, TimesEveryDistinctOpWithItsWorkAndThePolicysChoice) {
  const Outcome r = convjit("bench --model resnet50 --imgsz 32 --reps 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto report = nlohmann::json::parse(r.output);
  EXPECT_EQ(report["device"], "host");
  EXPECT_EQ(report["measure"], "wall time per call on the host, median over calls");
  // oneDNN where the bench process loaded it (then `auto` picks it), else
  // the reference alone.
  const bool onednn = report["backends"] == nlohmann::json::array({"onednn", "reference"});
  if (!onednn) {
    EXPECT_EQ(report["backends"], nlohmann::json::array({"reference"}));
  }
  EXPECT_TRUE(report["peaks"].is_null());  // no known limits for the host
  ASSERT_EQ(report["ops"].size(), 92u);    // as many as `run` finds
  double step_ms = 0;
  int step_ops = 0;
  for (const auto& op : report["ops"]) {
    EXPECT_EQ(op["policy"], onednn ? "onednn" : "reference");
    EXPECT_GT(op["reference"]["ms"].get<double>(), 0.0);
    if (onednn) {
      EXPECT_GT(op["onednn"]["ms"].get<double>(), 0.0) << op.dump();
      // A conv's two layouts: the dispatcher names the one it serves.
      if (op["onednn"].contains("variants")) {
        EXPECT_TRUE(op["onednn"]["variants"].contains(op.value("policy_variant", ""))) << op.dump();
      }
    }
    EXPECT_EQ(op["reference"]["variant"], "");           // the reference's only kernel
    EXPECT_FALSE(op["reference"].contains("variants"));  // listed only when there are several
    const bool conv = op["descriptor"].get<std::string>().starts_with("conv");
    EXPECT_EQ(op.contains("flop"), conv) << op.dump();
    EXPECT_GT(op["bytes"].get<double>(), 0.0) << op.dump();
    EXPECT_EQ(op["reference"].contains("tflops"), conv) << op.dump();
    EXPECT_GT(op["reference"]["gbs"].get<double>(), 0.0) << op.dump();  // every op's bytes
    EXPECT_FALSE(op.contains("roofline_ms"));                           // no known limits
    step_ms += op["count"].get<double>() * op["reference"]["ms"].get<double>();
    step_ops += op["count"].get<int>();
  }
  // The step counts each op as often as the model runs it: more ops than distinct ones.
  EXPECT_GT(step_ops, 92);
  EXPECT_DOUBLE_EQ(report["summary"]["backends"]["reference"]["ms"].get<double>(), step_ms);
  // Every op's choice was timed, at no less than the fastest.
  EXPECT_EQ(report["summary"]["policy"]["ops"], report["ops"].size());
  EXPECT_GE(report["summary"]["policy"]["ms"].get<double>(),
            report["summary"]["fastest_per_op_ms"].get<double>());
  EXPECT_FALSE(report["summary"].contains("jit_speedup_geomean"));
  // Stem at 32x32: y 1x64x16x16, each element 3 channels x 7x7 taps;
  // x, w and y moved once.
  const auto& stem = report["ops"][0];
  EXPECT_EQ(stem["layer"], "stem.conv");
  EXPECT_EQ(stem["flop"].get<double>(), 2.0 * 64 * 16 * 16 * 3 * 7 * 7);
  EXPECT_EQ(stem["bytes"].get<double>(), (3.0 * 32 * 32 + 64.0 * 3 * 7 * 7 + 64.0 * 16 * 16) * 4);
  EXPECT_EQ(stem["groups"], 1);
  EXPECT_EQ(stem["window"], nlohmann::json::array({7, 7}));
  // Max pool fwd: x 1x64x16x16 read, y 1x64x8x8 written, 4 bytes each.
  int max_pools = 0;
  for (const auto& op : report["ops"]) {
    if (op["layer"] != "stem.maxpool" || op["direction"] != "fwd") continue;
    ++max_pools;
    EXPECT_EQ(op["bytes"].get<double>(), (64.0 * 16 * 16 + 64.0 * 8 * 8) * 4);
  }
  EXPECT_EQ(max_pools, 1);
  const Outcome text = convjit("bench --model yolo11n --imgsz 32 --reps 1");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_EQ(text.first_line(), "convjit bench: yolo11n on host, a backend's best variant");
  EXPECT_EQ(text.line_starting("measure:"),
            "measure: wall time per call on the host, median over calls (1 calls)");
  EXPECT_NE(text.line_starting("b0.conv").find("GF/s"), std::string::npos) << text.output;
  const std::string step = text.line_starting("step, each op as often as one step runs it: ");
  EXPECT_NE(step.find("reference "), std::string::npos) << text.output;
  EXPECT_NE(step.find(" ms (192 ops)"), std::string::npos) << text.output;
}

TEST(CliBench, JsonOutWritesTheReportBesideTheTable) {
  TempCache cache;
  const std::string file = cache.dir + "/bench.json";
  Outcome r = convjit("bench --model cosmoflow --imgsz 32 --reps 1 --json-out " + file);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.first_line().find("convjit bench: cosmoflow on host"), std::string::npos);
  std::ifstream in(file);
  const auto report = nlohmann::json::parse(in);
  EXPECT_EQ(report["model"], "cosmoflow");
  EXPECT_EQ(report["ops"].size(), 24u);
  r = convjit("bench --model cosmoflow --imgsz 32 --json-out /proc/no/such/dir/bench.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("--json-out /proc/no/such/dir/bench.json: cannot write there"),
            std::string::npos)
      << r.output;
}

// --predict: the JIT's auto variant on each GPU of an architecture, from
// convjit analyze's model, beside the host times.
TEST(CliBench, PredictsTheJitsKernelsOnTheGpusOfAnArchitecture) {
  TempCache cache;
  const std::string table = cache.dir + "/net.json";
  std::ofstream(table) << R"({"name": "one", "image_size": 16, "layers": [
      {"name": "stem", "in": 16, "out": 32, "kernel": 3, "input_layer": true}]})";
  const std::string one_op = "bench --table " + table + " --dtype bf16 --layout nhwc --reps 1 ";
  Outcome r = convjit(one_op + "--predict sm_90 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto report = nlohmann::json::parse(r.output);
  ASSERT_EQ(report["ops"].size(), 2u);  // fwd and bwdfilt
  const auto& predicted = report["ops"][0]["predicted"];
  EXPECT_FALSE(predicted["variant"].get<std::string>().empty()) << predicted.dump();
  for (const char* gpu : {"H100 SXM", "H200"}) {
    const auto& seconds = predicted["gpus"][gpu]["seconds"];
    ASSERT_TRUE(seconds.is_array()) << predicted.dump();
    EXPECT_GT(seconds[0].get<double>(), 0.0);
    EXPECT_LE(seconds[0].get<double>(), seconds[1].get<double>());
    EXPECT_EQ(report["summary"]["predicted_step"][gpu]["ops"], 2);
  }
  r = convjit(one_op + "--predict sm_80");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("    predicted (jit "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("step predicted on A100"), std::string::npos) << r.output;
  r = convjit(one_op + "--predict sm_99");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("--predict sm_99: no GPU of it is modelled"), std::string::npos)
      << r.output;
}

// tools/gpu-check needs a bundle and an out folder, and says so; its run
// from a real bundle on a machine without a GPU (exit 2) is part of the
// gpu_bundle ctest.
TEST(GpuCheck, UsageAndAMissingBundleAreClearErrors) {
  const auto gpu_check = [](const std::string& args) {
    const std::string command = std::string(CONVJIT_GPU_CHECK_PATH) + " " + args + " 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    std::string output;
    std::array<char, 256> chunk{};
    while (pipe && std::fgets(chunk.data(), chunk.size(), pipe) != nullptr) output += chunk.data();
    const int status = pipe ? ::pclose(pipe) : -1;
    return Outcome{WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
  };
  Outcome r = gpu_check("");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.first_line(),
            "usage: tools/gpu-check --bundle DIR --out DIR [--quick] [--budget SECONDS] "
            "[--no-bench]");
  r = gpu_check("--bundle /nonexistent/bundle --out /tmp/convjit-gpu-check-unused");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("/nonexistent/bundle/convjit is missing: make the bundle with "
                          "tools/gpu-bundle"),
            std::string::npos)
      << r.output;
}

TEST(CliBench, ATimeLimitKeepsTheOpsMeasuredSoFarAndSaysItStopped) {
  Outcome r = convjit("bench --model resnet50 --imgsz 32 --reps 1 --time-limit 0.000001 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto report = nlohmann::json::parse(r.output);
  EXPECT_TRUE(report["stopped_at_time_limit"].get<bool>());
  EXPECT_EQ(report["distinct_ops"].get<std::size_t>(), 92u);
  EXPECT_LT(report["ops"].size(), 92u);
  r = convjit("bench --model resnet50 --imgsz 32 --reps 1 --time-limit 0.000001");
  EXPECT_NE(r.output.find("stopped at --time-limit after "), std::string::npos) << r.output;
  r = convjit("bench --model cosmoflow --imgsz 32 --reps 1 --time-limit 600 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  report = nlohmann::json::parse(r.output);
  EXPECT_FALSE(report["stopped_at_time_limit"].get<bool>());
  EXPECT_EQ(report["ops"].size(), report["distinct_ops"].get<std::size_t>());
  EXPECT_EQ(convjit("bench --model cosmoflow --time-limit 0").exit_code, 2);
}

TEST(CliBench, UsageErrorsNameTheFix) {
  Outcome r = convjit("bench");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("bench needs --model NAME or --table FILE"), std::string::npos)
      << r.output;
  r = convjit("bench --model lenet");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = convjit("bench --model yolo11n --reps 0");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

TEST(CliRunModel, UserTablesAndTheirErrors) {
  TempCache cache;
  const std::string table = cache.dir + "/net.json";
  std::ofstream(table) << R"({"name": "mini", "image_size": 12, "layers": [
      {"name": "stem", "in": 3, "out": 8, "kernel": 3, "stride": 2, "input_layer": true},
      {"name": "pool", "type": "maxpool", "level": 1, "in": 8, "kernel": 2},
      {"name": "head", "level": 2, "in": 8, "out": 4, "kernel": 1, "bias": true}]})";
  Outcome r = convjit("run --table " + table + " --reps 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // stem: fwd + bwdfilt; pool: fwd + bwd; head: fwd, bwddata, bwdfilt, bias.
  EXPECT_EQ(nlohmann::json::parse(r.output)["ops"].size(), 8u);
  r = convjit("run --table " + cache.dir + "/missing.json");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("cannot read the model table"), std::string::npos) << r.output;
  std::ofstream(cache.dir + "/broken.json") << "{ not json";
  r = convjit("run --table " + cache.dir + "/broken.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("is not valid JSON"), std::string::npos) << r.output;
  std::ofstream(cache.dir + "/bad.json")
      << R"({"image_size": 8, "layers": [{"in": 3, "out": 4, "type": "deconv"}]})";
  r = convjit("run --table " + cache.dir + "/bad.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("layers[0] (\"layer0\"): \"type\" = \"deconv\" is not conv"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(convjit("run --model yolo11n --table " + table).exit_code, 2);
  // Issue 15, item 7: errors name the layer and the field (a bad groups was
  // "w rank = 0"), a directory is no table, and a level cannot hang.
  std::ofstream(cache.dir + "/groups.json")
      << R"({"image_size": 8, "layers": [{"name": "dw", "in": 8, "out": 8, "groups": 3}]})";
  r = convjit("run --table " + cache.dir + "/groups.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("layers[0] (\"dw\"): \"groups\" = 3 must divide both \"in\" = 8 and "
                          "\"out\" = 8"),
            std::string::npos)
      << r.output;
  std::ofstream(cache.dir + "/level.json")
      << R"({"image_size": 8, "layers": [{"name": "deep", "in": 8, "out": 8, "level": 4000000000}]})";
  r = convjit("run --table " + cache.dir + "/level.json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("\"level\" = 4000000000 must be at most 62"), std::string::npos)
      << r.output;
  r = convjit("run --table " + cache.dir);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find(cache.dir + " is a directory; pass a model table file in JSON"),
            std::string::npos)
      << r.output;
}

TEST(CliJson, DescribeQueryModelsAndPreloadSpeakJson) {
  TempCache cache;
  const std::string problem = "conv --x 1,2,5,5 --w 3,2,3,3 --pad 1,1";
  auto described = nlohmann::json::parse(
      convjit_with_env(cache.env(), "describe " + problem + " --json").output);
  EXPECT_EQ(described["name"],
            "conv2d_1_2_5_5_0_50_25_5_1_0_3_2_3_3_0_1_3_5_5_0_75_25_5_1_0_1_1_0_1_1_0_1_1_0_1_fwd");
  EXPECT_EQ(described["probes"].size(), 2u);
  EXPECT_EQ(described["groups"], 1);
  auto queried =
      nlohmann::json::parse(convjit_with_env(cache.env(), "query " + problem + " --json").output);
  EXPECT_EQ(queried["probes"].size(), 2u);
  EXPECT_EQ(queried["probes"][0]["outcome"], "not found");
  EXPECT_EQ(queried["result"].get<std::string>().rfind(host_backend() + " (host)", 0), 0u);
  auto models = nlohmann::json::parse(convjit("models --json").output);
  EXPECT_EQ(models.size(), 3u);
  auto ops = nlohmann::json::parse(convjit("models --model resnet50 --json").output);
  EXPECT_EQ(ops.size(),
            118u);  // 72 conv and pool ops, a BatchNorm fwd and bwd after each of 23 conv rows
  EXPECT_EQ(ops[0]["layer"], "stem.conv");
  auto preload = nlohmann::json::parse(
      convjit_with_env(cache.env(), "preload --model cosmoflow --imgsz 32 --arch sm_80 --json")
          .output);
  EXPECT_EQ(preload["compiled"], 24);
  EXPECT_EQ(preload["failed"], 0);
}

TEST(CliCache, StatLsVerifyGcAndClear) {
  TempCache cache;
  ASSERT_EQ(
      convjit_with_env(cache.env(), "preload --model cosmoflow --imgsz 32 --arch sm_80").exit_code,
      0);
  Outcome r = convjit_with_env(cache.env(), "cache stat");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("entries    24\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("sm_80      24"), std::string::npos);
  r = convjit_with_env(cache.env(), "cache ls --json");
  ASSERT_EQ(r.exit_code, 0);
  const auto listed = nlohmann::json::parse(r.output);
  ASSERT_EQ(listed.size(), 24u);
  EXPECT_EQ(listed[0]["arch"], "sm_80");
  EXPECT_EQ(listed[0]["descriptor"].get<std::string>().rfind("maxpool3d_", 0) == 0 ||
                listed[0]["descriptor"].get<std::string>().rfind("conv3d_", 0) == 0,
            true);
  // Damage one entry: verify quarantines exactly it.
  {
    std::fstream f(listed[3]["path"].get<std::string>(),
                   std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-7, std::ios::end);
    f.put('\x5a');
  }
  // Temporaries of killed publishes: the stale one goes, a fresh one (a
  // publish in flight) stays.  Issue 15, item 8.
  const std::string entry = listed[4]["path"].get<std::string>();
  const std::string stale = entry + ".tmp.99999.0.dead", fresh = entry + ".tmp.99999.1.live";
  std::ofstream(stale) << "half an entry";
  std::ofstream(fresh) << "half an entry";
  std::filesystem::last_write_time(
      stale, std::filesystem::file_time_type::clock::now() - std::chrono::hours(2));
  r = convjit_with_env(cache.env(), "cache verify");
  EXPECT_NE(r.output.find("verify: 1 damaged entry moved to quarantine (compiled again when next "
                          "needed), 1 stale temporary file removed"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("rebuilt"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(stale));
  EXPECT_TRUE(std::filesystem::exists(fresh));
  std::filesystem::remove(fresh);
  EXPECT_NE(convjit_with_env(cache.env(), "cache stat").output.find("entries    23\n"),
            std::string::npos);
  // gc to half the cache's size: some entries go, the newest stay.
  const auto before_gc =
      nlohmann::json::parse(convjit_with_env(cache.env(), "cache stat --json").output);
  const std::uint64_t budget = before_gc["bytes"].get<std::uint64_t>() / 2;
  r = convjit_with_env(cache.env(), "cache gc --max-bytes " + std::to_string(budget));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto after_gc =
      nlohmann::json::parse(convjit_with_env(cache.env(), "cache stat --json").output);
  EXPECT_LE(after_gc["bytes"].get<std::uint64_t>(), budget);
  EXPECT_GT(after_gc["entries"].get<int>(), 0);
  EXPECT_LT(after_gc["entries"].get<int>(), before_gc["entries"].get<int>());
  r = convjit_with_env(cache.env(), "cache clear");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("add --yes"), std::string::npos);
  // The tuned policy measures each op of the tiny network once, keeps its
  // decisions in the cache, and `cache clear` removes them too.
  r = convjit_with_env(cache.env() + "CONVJIT_POLICY=tuned CONVJIT_VERBOSE=1 ",
                       "run --batch 1 --imgsz 8");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("measured: reference"), std::string::npos) << r.output;
  r = convjit_with_env(cache.env() + "CONVJIT_POLICY=tuned CONVJIT_VERBOSE=1 ",
                       "run --batch 1 --imgsz 8");
  EXPECT_NE(r.output.find("tuning decision stored earlier"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("measured: reference"), std::string::npos) << r.output;
  std::size_t decisions = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(cache.dir + "/decisions"))
    decisions += e.path().extension() == ".json";
  EXPECT_GT(decisions, 10u);  // one per distinct op of the tiny network
  r = convjit_with_env(cache.env(), "cache clear --yes");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.output.find(fmt_count("cleared {} tuning decisions", decisions)), std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(cache.dir + "/decisions"));
  EXPECT_NE(convjit_with_env(cache.env(), "cache stat").output.find("entries    0\n"),
            std::string::npos);
  EXPECT_EQ(convjit_with_env(cache.env(), "cache").exit_code, 2);
}

}  // namespace
