// Batchnorm and resize descriptors: their names byte for byte, round trips
// through the parser for every flag, the JSON form, and precise errors for
// malformed names.
#include <gtest/gtest.h>

#include "dispatcher/descriptor/descriptor_builder.hpp"
#include "dispatcher/descriptor/descriptor_json.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "support/host_tensor.hpp"

namespace convjit::test {
namespace {

TensorDesc contiguous(std::initializer_list<int64_t> dims, Layout layout = CONVJIT_LAYOUT_NCHW,
                      DType dtype = CONVJIT_DTYPE_F32) {
  TensorDesc t;
  EXPECT_TRUE(TensorDesc::contiguous(t, dtype, dims, layout).is_ok());
  return t;
}

OpDescriptor batchnorm(Direction direction, std::int32_t flags, const TensorDesc& x,
                       convjit_activation_t act = CONVJIT_ACTIVATION_IDENTITY, bool onnx = false,
                       double epsilon = 1e-5) {
  BatchNormParams p;
  p.epsilon = epsilon;
  p.activation = act;
  p.onnx_running_stats = onnx ? 1 : 0;
  auto d = make_batchnorm_descriptor(&p, direction, flags, &x, &x);
  EXPECT_TRUE(d.is_ok()) << d.status().message();
  return d.is_ok() ? d.value() : OpDescriptor{};
}

OpDescriptor resize(const ResizeParams& p, Direction direction, const TensorDesc& x,
                    const TensorDesc* y) {
  auto d = make_resize_descriptor(&p, direction, &x, y);
  EXPECT_TRUE(d.is_ok()) << d.status().message();
  return d.is_ok() ? d.value() : OpDescriptor{};
}

void expect_round_trip(const OpDescriptor& d) {
  for (const OpDescriptor& form : {d, with_symbolic_batch(d)}) {
    const std::string name = descriptor_name(form);
    const auto parsed = parse_descriptor_name("lib" + name + ".so");
    ASSERT_TRUE(parsed.is_ok()) << name << ": " << parsed.status().message();
    EXPECT_EQ(parsed.value(), form) << name;
    EXPECT_EQ(descriptor_name(parsed.value()), name);
  }
}

constexpr std::int32_t kAffine = kNormScale | kNormShift;

TEST(BatchNormName, YoloLayerIsSpelledOut) {
  const TensorDesc x = contiguous({32, 16, 80, 80});
  EXPECT_EQ(descriptor_name(batchnorm(Direction::fwd, kAffine, x)),
            "batchnorm2d_32_16_80_80_0_102400_6400_80_1_0_32_16_80_80_0_102400_6400_80_1_0_fwd");
  EXPECT_EQ(descriptor_name(with_symbolic_batch(batchnorm(
                Direction::bwd, kAffine | kNormGradInput | kNormGradScale, x,
                CONVJIT_ACTIVATION_SILU))),
            "batchnorm2d_B_16_80_80_0_102400_6400_80_1_0_B_16_80_80_0_102400_6400_80_1_0_bwd_grads_"
            "dx_dscale_ep_silu");
}

TEST(BatchNormName, EveryFlagRoundTrips) {
  const TensorDesc nhwc = contiguous({4, 5, 3, 7}, CONVJIT_LAYOUT_NHWC, CONVJIT_DTYPE_BF16);
  const TensorDesc d3 = contiguous({2, 3, 4, 5, 6}, CONVJIT_LAYOUT_NCHW, CONVJIT_DTYPE_F64);
  const TensorDesc d1 = contiguous({3, 8, 9}, CONVJIT_LAYOUT_NHWC, CONVJIT_DTYPE_F16);
  expect_round_trip(batchnorm(Direction::fwd, kAffine, nhwc));
  expect_round_trip(batchnorm(Direction::fwd, kNormShift, d3, CONVJIT_ACTIVATION_RELU, true));
  expect_round_trip(batchnorm(Direction::fwd, kNormInference, d1));
  expect_round_trip(batchnorm(Direction::bwd, kAffine | kNormGradMask, nhwc));
  expect_round_trip(batchnorm(Direction::bwd, kNormScale | kNormInference | kNormGradShift, d3,
                              CONVJIT_ACTIVATION_SILU));
  const OpDescriptor yolo = batchnorm(Direction::fwd, kAffine, nhwc, CONVJIT_ACTIVATION_SILU,
                                      false, 1e-3);
  EXPECT_NE(descriptor_name(yolo).find("_fwd_eps_0.001_ep_silu_bf16"), std::string::npos)
      << descriptor_name(yolo);
  expect_round_trip(yolo);
  expect_round_trip(batchnorm(Direction::bwd, kAffine | kNormGradInput, d1,
                              CONVJIT_ACTIVATION_IDENTITY, false, 0.0));
}

TEST(ResizeName, UpsampleIsSpelledOutWithItsScales) {
  const TensorDesc x = contiguous({1, 256, 20, 20}), y = contiguous({1, 256, 40, 40});
  ResizeParams p(2, CONVJIT_RESIZE_NEAREST);
  EXPECT_EQ(descriptor_name(resize(p, Direction::fwd, x, &y)),
            "resize2d_1_256_20_20_0_102400_400_20_1_0_1_256_40_40_0_409600_1600_40_1_0_nearest_"
            "asymmetric_fwd");
  p.scale[0] = p.scale[1] = 2;
  EXPECT_EQ(descriptor_name(resize(p, Direction::fwd, x, nullptr)),
            "resize2d_1_256_20_20_0_102400_400_20_1_0_1_256_40_40_0_409600_1600_40_1_0_nearest_"
            "asymmetric_fwd_sc_2_2_0");
}

TEST(ResizeName, EveryModeAndCoordinateRoundTrips) {
  const TensorDesc x = contiguous({2, 3, 5, 7}, CONVJIT_LAYOUT_NHWC, CONVJIT_DTYPE_F16);
  const TensorDesc y = contiguous({2, 3, 7, 3}, CONVJIT_LAYOUT_NCHW, CONVJIT_DTYPE_F16);
  for (int mode = CONVJIT_RESIZE_NEAREST; mode <= CONVJIT_RESIZE_LINEAR; ++mode)
    for (int c = CONVJIT_RESIZE_ASYMMETRIC; c <= CONVJIT_RESIZE_TF_HALF_PIXEL_FOR_NN; ++c) {
      if (mode == CONVJIT_RESIZE_LINEAR && c == CONVJIT_RESIZE_TF_HALF_PIXEL_FOR_NN) continue;
      ResizeParams p(2, static_cast<convjit_resize_mode_t>(mode));
      p.coordinates = static_cast<convjit_resize_coordinates_t>(c);
      expect_round_trip(resize(p, Direction::bwd, x, &y));
    }
  ResizeParams thirds(3, CONVJIT_RESIZE_LINEAR);
  thirds.scale[0] = 1.0 / 3, thirds.scale[1] = 0.7, thirds.scale[2] = 2.5;
  const TensorDesc x3 = contiguous({1, 2, 9, 10, 4}, CONVJIT_LAYOUT_NCHW, CONVJIT_DTYPE_BF16);
  const OpDescriptor d = resize(thirds, Direction::fwd, x3, nullptr);
  EXPECT_NE(descriptor_name(d).find("_sc_0.3333333333333333_0.7_2.5_bf16"), std::string::npos)
      << descriptor_name(d);
  expect_round_trip(d);
}

TEST(NormResizeJson, NamesTheOpsFields) {
  const auto bn = descriptor_json(batchnorm(Direction::bwd, kNormScale | kNormGradInput,
                                            contiguous({2, 3, 4})));
  EXPECT_EQ(bn["op"], "batchnorm");
  EXPECT_EQ(bn["grads"], nlohmann::json::array({"dx"}));
  EXPECT_EQ(bn["shift"], false);
  EXPECT_EQ(bn["problem"],
            "batchnorm --x 2,3,4 --x-strides 12,4,1 --no-shift --grads dx --y-strides 12,4,1 "
            "--dtype f32 --op bwd");
  ResizeParams p(1, CONVJIT_RESIZE_LINEAR);
  p.scale[0] = 1.5;
  const auto rs = descriptor_json(resize(p, Direction::fwd, contiguous({2, 3, 4}), nullptr));
  EXPECT_EQ(rs["mode"], "linear");
  EXPECT_EQ(rs["coordinates"], "half-pixel");
  EXPECT_EQ(rs["scales"], nlohmann::json::array({1.5}));
  EXPECT_EQ(rs["y"], nlohmann::json::array({2, 3, 6}));
}

void expect_parse_error(const std::string& name, const std::string& needle) {
  const auto parsed = parse_descriptor_name(name);
  ASSERT_FALSE(parsed.is_ok()) << name;
  EXPECT_NE(parsed.status().message().find(needle), std::string::npos)
      << parsed.status().message();
}

constexpr const char* kBn = "batchnorm1d_2_3_4_0_0_12_4_1_0_0_2_3_4_0_0_12_4_1_0_0_";
constexpr const char* kRs = "resize1d_2_3_4_0_0_12_4_1_0_0_2_3_8_0_0_24_8_1_0_0_";

TEST(NormResizeName, MalformedNamesAreRejectedPrecisely) {
  expect_parse_error(std::string(kBn) + "bwd_grads_dx_dscale_dshift",
                     "fewer than all three gradients (omit 'grads'");
  expect_parse_error(std::string(kBn) + "bwd_grads", "dx, dscale or dshift after 'grads'");
  expect_parse_error(std::string(kBn) + "fwd_ep_sigmoid",
                     "the fused activation after 'ep': one of relu, silu");
  expect_parse_error(std::string(kBn) + "fwd_inference_onnx",
                     "ONNX running statistics apply to a training forward only");
  expect_parse_error(std::string(kBn) + "fwd_f32", "f32 is the default");
  expect_parse_error(std::string(kBn) + "fwd_eps_1e-05", "an epsilon other than 1e-05");
  expect_parse_error(std::string(kBn) + "fwd_eps_-1", "non-negative decimal");
  expect_parse_error(std::string(kRs) + "bilinear_half-pixel_fwd", "one of nearest, nearest-ceil");
  expect_parse_error(std::string(kRs) + "nearest_asymmetric_fwd_sc_0_0_0",
                     "a non-zero scale (omit 'sc'");
  expect_parse_error(std::string(kRs) + "nearest_asymmetric_fwd_sc_2.0_0_0", "shortest form");
  expect_parse_error(std::string(kRs) + "nearest_asymmetric_fwd_sc_3_0_0",
                     "y shape[2] = 8 is not floor(4 * scale 3) = 12");
  expect_parse_error(std::string(kRs) + "linear_tf-half-pixel-for-nn_fwd",
                     "tf-half-pixel-for-nn applies to nearest modes only");
}

}  // namespace
}  // namespace convjit::test
