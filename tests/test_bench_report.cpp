// `convjit bench`'s arithmetic, which only a GPU run would otherwise
// exercise: the roofline bound of an op on the known devices, the step
// summary over measured rows, and the table with its variant lines.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dispatcher/descriptor/descriptor_name.hpp"
#include "tools/cli/bench_report.hpp"
#include "analysis/op_roofline.hpp"

namespace convjit::cli {
namespace {

using analysis::compute_peak_tflops;
using analysis::device_peaks;
using analysis::DevicePeaks;
using analysis::op_work;
using analysis::OpWork;
using analysis::roofline;
using analysis::Roofline;

OpDescriptor parse(const std::string& name) {
  auto d = parse_descriptor_name(name);
  EXPECT_TRUE(d.is_ok()) << d.status().message();
  return d.value();
}

// ResNet-50's 3x3 64->64 conv at batch 32, 56x56, bf16 NHWC.
constexpr const char* kResnet3x3 =
    "conv2d_32_64_56_56_0_200704_1_3584_64_0_64_64_3_3_0_32_64_56_56_0_200704_1_3584_64_0_1_1_0_1_"
    "1_0_1_1_0_1_fwd_bf16";

TEST(Roofline, ConvolutionsAreBoundByMathOrByMovingTheirOperandsOnce) {
  const OpDescriptor d = parse(kResnet3x3);
  const OpWork work = op_work(d);
  const double y = 32.0 * 64 * 56 * 56, x = y, w = 64.0 * 64 * 9;
  EXPECT_EQ(work.flop, 2 * y * 64 * 9);
  EXPECT_EQ(work.bytes, (x + w + y) * 2);
  // 288 FLOP per byte sits just under an H100's bf16 ridge (989 / 3.35 =
  // 295): memory bound, by a hair; in strict f32 the math bounds it.
  const DevicePeaks h100 = *device_peaks("NVIDIA H100 80GB HBM3");
  const Roofline r = roofline(work, h100, compute_peak_tflops(h100, d.dtype, false));
  EXPECT_FALSE(r.compute_bound);
  EXPECT_DOUBLE_EQ(r.ms, work.bytes / 3350e9 * 1e3);
  const Roofline f32 = roofline(work, h100, compute_peak_tflops(h100, DataType::f32, false));
  EXPECT_TRUE(f32.compute_bound);
  EXPECT_DOUBLE_EQ(f32.ms, work.flop / 67e12 * 1e3);
  // A depthwise 3x3 moves far more than it computes.
  const OpWork depthwise{2 * y * 9, (x + y) * 2};
  const Roofline m = roofline(depthwise, h100, 989);
  EXPECT_FALSE(m.compute_bound);
  EXPECT_DOUBLE_EQ(m.ms, depthwise.bytes / 3350e9 * 1e3);
}

// A strided conv moves only the part of x its windows reach: ResNet-50's
// layer2.0.downsample (1 x 1, stride 2) reads one in two of x's columns
// and rows, its stem (7 x 7, stride 2) all of them, a bwddata writes all
// of dx, and an unpadded conv reaches the edges its outputs fall short of.
TEST(Roofline, AStridedConvMovesOnlyThePartOfXItsWindowsReach) {
  const OpDescriptor downsample = parse(
      "conv2d_32_256_56_56_0_802816_1_14336_256_0_512_256_1_1_0_32_512_28_28_0_401408_1_14336_"
      "512_0_0_0_0_2_2_0_1_1_0_1_fwd_bf16");
  const double x = 32.0 * 256 * 56 * 56, y = 32.0 * 512 * 28 * 28, w = 512.0 * 256;
  EXPECT_EQ(op_work(downsample).bytes, (x / 4 + w + y) * 2);
  OpDescriptor back = downsample;
  back.direction = Direction::bwddata;
  EXPECT_EQ(op_work(back).bytes, (x + w + y) * 2);
  const OpDescriptor stem = parse(
      "conv2d_32_3_224_224_0_150528_1_672_3_0_64_3_7_7_0_32_64_112_112_0_802816_1_7168_64_0_3_3_"
      "0_2_2_0_1_1_0_1_fwd_bf16");
  EXPECT_EQ(op_work(stem).bytes,
            (32.0 * 3 * 224 * 224 + 64.0 * 3 * 49 + 32.0 * 64 * 112 * 112) * 2);
  // Unpadded, a 3 x 3 conv of stride 1 has two outputs fewer an axis and
  // reaches all of x.
  const OpDescriptor valid = parse(
      "conv2d_32_64_56_56_0_200704_1_3584_64_0_64_64_3_3_0_32_64_54_54_0_186624_1_3456_64_0_0_0_"
      "0_1_1_0_1_1_0_1_fwd_bf16");
  EXPECT_EQ(op_work(valid).bytes, (32.0 * 64 * 56 * 56 + 64.0 * 64 * 9 + 32.0 * 64 * 54 * 54) * 2);
}

// A fused epilogue's bias and residual are moved too; its math is noise.
TEST(Roofline, AFusedEpilogueAddsItsOperandsBytes) {
  const std::string name = kResnet3x3;
  const OpDescriptor plain = parse(name);
  const OpDescriptor fused =
      parse(name.substr(0, name.size() - 5) + "_ep_relu_bias_res_bf16");
  const double y = 32.0 * 64 * 56 * 56;
  EXPECT_EQ(op_work(fused).flop, op_work(plain).flop);
  EXPECT_EQ(op_work(fused).bytes, op_work(plain).bytes + (64 + y) * 2);
}

TEST(Roofline, F32IsHeldToTheTf32PeakOnlyWhereTf32IsAllowed) {
  const DevicePeaks h200 = *device_peaks("NVIDIA H200");
  EXPECT_EQ(compute_peak_tflops(h200, DataType::f32, false), 67);
  EXPECT_EQ(compute_peak_tflops(h200, DataType::f32, true), 495);
  EXPECT_EQ(compute_peak_tflops(h200, DataType::bf16, true), 989);
  EXPECT_EQ(h200.bandwidth_gbs, 4800);
  EXPECT_FALSE(device_peaks("NVIDIA H100 PCIe").has_value());
  EXPECT_EQ(device_peaks("NVIDIA A100-SXM4-80GB")->half_tflops, 312);
  EXPECT_FALSE(device_peaks("NVIDIA A100-PCIE-40GB").has_value());
}

TEST(Roofline, PoolingIsBoundByMemoryAlone) {
  const OpDescriptor d = parse(
      "maxpool2d_32_64_112_112_0_802816_1_7168_64_0_3_3_0_32_64_56_56_0_200704_1_3584_64_0_1_1_0_"
      "2_2_0_1_1_0_fwd_bf16");
  const OpWork work = op_work(d);
  EXPECT_EQ(work.flop, 0);
  EXPECT_EQ(work.bytes, (32.0 * 64 * 112 * 112 + 32.0 * 64 * 56 * 56) * 2);
}

nlohmann::json timing(double ms, double bound_ms) {
  return {{"ms", ms},
          {"variant", "v"},
          {"tflops", 1.0},
          {"gbs", 1000.0 / ms},
          {"peak_fraction", bound_ms / ms}};
}

// Two ops, one run three times a step: the step weighs each by its count.
nlohmann::json two_rows() {
  nlohmann::json a{
      {"layer", "a"}, {"direction", "fwd"}, {"count", 3}, {"roofline_ms", 1.0}, {"policy", "jit"}};
  a["jit"] = timing(2.0, 1.0);
  a["jit"]["variants"] = {{"tc128x128", {{"ms", 2.0}, {"peak_fraction", 0.5}}},
                          {"direct", "failed: too big"}};
  a["cudnn"] = timing(4.0, 1.0);
  a["jit_speedup"] = 2.0;
  a["policy_variant"] = "tc128x128";
  nlohmann::json b{{"layer", "b"},       {"direction", "bwddata"}, {"count", 1},
                   {"roofline_ms", 2.0}, {"policy", "cudnn"},      {"bound", "memory"}};
  b["jit"] = timing(8.0, 2.0);
  b["cudnn"] = timing(4.0, 2.0);
  b["jit_speedup"] = 0.5;
  return nlohmann::json::array({a, b});
}

TEST(BenchReport, TheStepWeighsEachOpByHowOftenItRuns) {
  const nlohmann::json s = summarize_step(two_rows(), {"jit", "cudnn"});
  EXPECT_DOUBLE_EQ(s["backends"]["jit"]["ms"].get<double>(), 3 * 2.0 + 8.0);
  EXPECT_DOUBLE_EQ(s["backends"]["cudnn"]["ms"].get<double>(), 3 * 4.0 + 4.0);
  EXPECT_DOUBLE_EQ(s["roofline_ms"].get<double>(), 3 * 1.0 + 2.0);
  EXPECT_DOUBLE_EQ(s["backends"]["jit"]["roofline_fraction"].get<double>(), 5.0 / 14.0);
  EXPECT_DOUBLE_EQ(s["fastest_per_op_ms"].get<double>(), 3 * 2.0 + 4.0);
  EXPECT_DOUBLE_EQ(s["jit_speedup_geomean"]["fwd"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(s["jit_speedup_geomean"]["bwddata"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(s["jit_speedup_geomean"]["all"].get<double>(), 1.0);
}

TEST(BenchReport, ADeclinedOpLeavesTheBoundOutOfThatBackendsShare) {
  nlohmann::json rows = two_rows();
  rows[1]["jit"] = {{"declined", "no"}};
  rows[1].erase("jit_speedup");
  const nlohmann::json s = summarize_step(rows, {"jit", "cudnn"});
  EXPECT_EQ(s["backends"]["jit"]["ops"], 1);
  EXPECT_FALSE(s["backends"]["jit"].contains("roofline_fraction"));
  EXPECT_TRUE(s["backends"]["cudnn"].contains("roofline_fraction"));
  EXPECT_FALSE(s["jit_speedup_geomean"].contains("bwddata"));
}

// The dispatcher's choice is timed where its backend timed the variant it
// names: op a's jit tc128x128 (2 ms, 3 a step), op b's only cuDNN kernel.
TEST(BenchReport, ThePoliciesStepIsTheTimeOfItsChoices) {
  nlohmann::json rows = two_rows();
  EXPECT_EQ(policy_ms(rows[0]), 2.0);
  EXPECT_EQ(policy_ms(rows[1]), 4.0);
  nlohmann::json s = summarize_step(rows, {"jit", "cudnn"});
  EXPECT_DOUBLE_EQ(s["policy"]["ms"].get<double>(), 3 * 2.0 + 4.0);
  EXPECT_EQ(s["policy"]["ops"], 2);
  rows[0]["policy_variant"] = "direct";  // failed to time
  EXPECT_EQ(policy_ms(rows[0]), std::nullopt);
  rows[0]["policy_variant"] = "tc64x64";  // not among those timed
  EXPECT_EQ(policy_ms(rows[0]), std::nullopt);
  rows[1]["policy"] = "none";  // no backend served it
  EXPECT_EQ(policy_ms(rows[1]), std::nullopt);
  rows[1]["policy"] = "jit";  // its jit has one variant: that one
  EXPECT_EQ(policy_ms(rows[1]), 8.0);
  s = summarize_step(rows, {"jit", "cudnn"});
  EXPECT_DOUBLE_EQ(s["policy"]["ms"].get<double>(), 8.0);
  EXPECT_EQ(s["policy"]["ops"], 1);
}

TEST(BenchReport, TheTableListsEveryVariantAndTheStep) {
  const nlohmann::json rows = two_rows();
  const nlohmann::json report{{"model", "m"},
                              {"device", "gpu 0"},
                              {"gpu", "NVIDIA H100"},
                              {"backends", nlohmann::json::array({"jit", "cudnn"})},
                              {"measure", "device time"},
                              {"repetitions", 5},
                              {"distinct_ops", 2},
                              {"stopped_at_time_limit", false},
                              {"ops", rows},
                              {"summary", summarize_step(rows, {"jit", "cudnn"})}};
  std::string text;
  try {
    text = format_bench_report(report);
  } catch (const std::exception& e) {
    FAIL() << e.what();
  }
  // Arithmetic rates for the compute-bound op, bandwidth for the memory-bound one.
  EXPECT_NE(text.find("2.0000 ms 1.00 TF/s 50% v"), std::string::npos) << text;
  EXPECT_NE(text.find("8.0000 ms 125.0 GB/s 25%"), std::string::npos) << text;
  EXPECT_NE(text.find("    jit variants: direct failed: too big, tc128x128 2.0000 ms 50%\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(" 2.00x jit tc128x128\n"), std::string::npos) << text;
  EXPECT_NE(text.find(" 0.50x cudnn\n"), std::string::npos) << text;
  EXPECT_NE(text.find("step, each op as often as one step runs it: jit 14.0000 ms (2 ops, 36% "
                      "of the roofline), cudnn 16.0000 ms (2 ops, 31% of the roofline), fastest "
                      "per op 10.0000 ms, the policy's choices 10.0000 ms (2 of 2 ops timed)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("jit/cuDNN geomean: all 1.00x, bwddata 0.50x, fwd 2.00x\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace convjit::cli
