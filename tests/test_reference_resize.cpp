// The host reference resize: hand-worked PyTorch and ONNX coordinate rules,
// a given scale against the sizes' ratio, the backward as the exact adjoint
// of the forward in every mode and layout, and the errors bad input gets.
#include <gtest/gtest.h>

#include <random>

#include "support/host_tensor.hpp"
#include "support/policy_scope.hpp"

namespace convjit::test {
namespace {

std::vector<double> resize1d(const std::vector<double>& x, std::int64_t out,
                             convjit_resize_mode_t mode, convjit_resize_coordinates_t coordinates,
                             double scale = 0) {
  HostTensor<double> in({1, 1, static_cast<std::int64_t>(x.size())}, TestLayout::nchw);
  HostTensor<double> y({1, 1, out}, TestLayout::nchw);
  for (std::size_t i = 0; i < x.size(); ++i) in.set(static_cast<std::int64_t>(i), x[i]);
  ResizeParams p(1, mode);
  p.coordinates = coordinates;
  p.scale[0] = scale;
  const PolicyScope reference(Policy::reference);
  const Status s = resize_forward(p, in.desc(), in.data(), y.desc(), y.data());
  EXPECT_TRUE(s.is_ok()) << s.message();
  return y.values();
}

using V = std::vector<double>;

TEST(ResizeHandWorked, PyTorchModes) {
  const V x{1, 2, 3};
  // nearest: floor(o * 3/6); nearest-exact: floor((o + 0.5) * 3/5).
  EXPECT_EQ(resize1d(x, 6, CONVJIT_RESIZE_NEAREST, CONVJIT_RESIZE_ASYMMETRIC), (V{1, 1, 2, 2, 3, 3}));
  EXPECT_EQ(resize1d(x, 5, CONVJIT_RESIZE_NEAREST, CONVJIT_RESIZE_ASYMMETRIC), (V{1, 1, 2, 2, 3}));
  EXPECT_EQ(resize1d(x, 5, CONVJIT_RESIZE_NEAREST_ROUND_PREFER_CEIL, CONVJIT_RESIZE_HALF_PIXEL),
            (V{1, 1, 2, 3, 3}));
  // linear, align_corners=False: x = (o + 0.5) / 2 - 0.5, clamped at 0.
  EXPECT_EQ(resize1d(x, 6, CONVJIT_RESIZE_LINEAR, CONVJIT_RESIZE_HALF_PIXEL),
            (V{1, 1.25, 1.75, 2.25, 2.75, 3}));
  // align_corners=True: x = o * 2/5.
  const V corners = resize1d(x, 6, CONVJIT_RESIZE_LINEAR, CONVJIT_RESIZE_ALIGN_CORNERS);
  const V expected{1, 1.4, 1.8, 2.2, 2.6, 3};
  for (std::size_t i = 0; i < 6; ++i) EXPECT_NEAR(corners[i], expected[i], 1e-6) << i;
  // Downscaling 4 -> 2 averages neighbour pairs at half-pixel centres.
  EXPECT_EQ(resize1d({1, 3, 5, 9}, 2, CONVJIT_RESIZE_LINEAR, CONVJIT_RESIZE_HALF_PIXEL),
            (V{2, 7}));
}

TEST(ResizeHandWorked, OnnxRoundingsAndCoordinates) {
  const V x{10, 20, 30, 40};
  // 4 -> 3, half-pixel: x = (o + 0.5) * 4/3 - 0.5 = 1/6, 3/2, 17/6.
  EXPECT_EQ(resize1d(x, 3, CONVJIT_RESIZE_NEAREST_ROUND_PREFER_FLOOR, CONVJIT_RESIZE_HALF_PIXEL),
            (V{10, 20, 40}));
  EXPECT_EQ(resize1d(x, 3, CONVJIT_RESIZE_NEAREST_ROUND_PREFER_CEIL, CONVJIT_RESIZE_HALF_PIXEL),
            (V{10, 30, 40}));
  EXPECT_EQ(resize1d(x, 3, CONVJIT_RESIZE_NEAREST_CEIL, CONVJIT_RESIZE_HALF_PIXEL),
            (V{20, 30, 40}));
  // tf_half_pixel_for_nn: x = (o + 0.5) * 4/3 = 2/3, 2, 10/3.
  EXPECT_EQ(resize1d(x, 3, CONVJIT_RESIZE_NEAREST_ROUND_PREFER_FLOOR,
                     CONVJIT_RESIZE_TF_HALF_PIXEL_FOR_NN),
            (V{20, 30, 40}));
  // pytorch_half_pixel to one output reads x = 0; half_pixel reads x = 1.5.
  EXPECT_EQ(resize1d(x, 1, CONVJIT_RESIZE_LINEAR, CONVJIT_RESIZE_PYTORCH_HALF_PIXEL), (V{10}));
  EXPECT_EQ(resize1d(x, 1, CONVJIT_RESIZE_LINEAR, CONVJIT_RESIZE_HALF_PIXEL), (V{25}));
}

// PyTorch maps with the scale it was given: 5 * 1.5 gives 7 outputs, read
// at x = (o + 0.5) / 1.5 - 0.5, not at (o + 0.5) * 5/7 - 0.5.
TEST(ResizeHandWorked, AGivenScaleMapsCoordinates) {
  const V x{0, 1, 2, 3, 4};
  const V given = resize1d(x, 7, CONVJIT_RESIZE_LINEAR, CONVJIT_RESIZE_HALF_PIXEL, 1.5);
  const V derived = resize1d(x, 7, CONVJIT_RESIZE_LINEAR, CONVJIT_RESIZE_HALF_PIXEL);
  for (std::size_t o = 0; o < 7; ++o) {
    const double src = std::max(0.0, (static_cast<double>(o) + 0.5) / 1.5 - 0.5);
    EXPECT_NEAR(given[o], std::min(src, 4.0), 1e-6) << o;
  }
  EXPECT_NE(given, derived);
}

struct AdjointCase {
  std::vector<std::int64_t> x_dims, y_dims;
  convjit_resize_mode_t mode;
  convjit_resize_coordinates_t coordinates;
  TestLayout layout;
};

class ResizeAdjoint : public ::testing::TestWithParam<AdjointCase> {};

// <resize(x), r> = <x, resize_bwd(r)> in f64, to rounding.
TEST_P(ResizeAdjoint, BackwardIsTheForwardsAdjoint) {
  const AdjointCase& c = GetParam();
  HostTensor<double> x(c.x_dims, c.layout), y(c.y_dims, TestLayout::nchw);
  HostTensor<double> r(c.y_dims, c.layout), dx(c.x_dims, TestLayout::halo);
  std::mt19937 rng(5);
  x.fill_random(rng);
  r.fill_random(rng);
  ResizeParams p(static_cast<int>(c.x_dims.size()) - 2, c.mode);
  p.coordinates = c.coordinates;
  const PolicyScope reference(Policy::reference);
  ASSERT_TRUE(resize_forward(p, x.desc(), x.data(), y.desc(), y.data()).is_ok());
  const Status s = resize_backward(p, r.desc(), r.data(), dx.desc(), dx.data());
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_NEAR(dot(y, r), dot(x, dx), 1e-9 * static_cast<double>(y.count()));
  // Every output lands somewhere: the gradients sum to the outputs' when
  // each output's weights sum to 1.
  double total_r = 0, total_dx = 0;
  for (std::int64_t i = 0; i < r.count(); ++i) total_r += r.get(i);
  for (std::int64_t i = 0; i < dx.count(); ++i) total_dx += dx.get(i);
  EXPECT_NEAR(total_r, total_dx, 1e-9 * static_cast<double>(y.count()));
}

INSTANTIATE_TEST_SUITE_P(
    ModesAndLayouts, ResizeAdjoint,
    ::testing::Values(
        AdjointCase{{2, 3, 7}, {2, 3, 14}, CONVJIT_RESIZE_NEAREST, CONVJIT_RESIZE_ASYMMETRIC,
                    TestLayout::nchw},
        AdjointCase{{1, 5, 5, 3}, {1, 5, 10, 6}, CONVJIT_RESIZE_NEAREST, CONVJIT_RESIZE_ASYMMETRIC,
                    TestLayout::nhwc},
        AdjointCase{{2, 3, 5, 4}, {2, 3, 3, 9}, CONVJIT_RESIZE_NEAREST_ROUND_PREFER_CEIL,
                    CONVJIT_RESIZE_HALF_PIXEL, TestLayout::halo},
        AdjointCase{{2, 2, 6, 5}, {2, 2, 11, 4}, CONVJIT_RESIZE_LINEAR, CONVJIT_RESIZE_HALF_PIXEL,
                    TestLayout::nhwc},
        AdjointCase{{1, 3, 4, 4}, {1, 3, 7, 9}, CONVJIT_RESIZE_LINEAR,
                    CONVJIT_RESIZE_ALIGN_CORNERS, TestLayout::nchw},
        AdjointCase{{2, 3, 3, 4, 5}, {2, 3, 6, 8, 10}, CONVJIT_RESIZE_LINEAR,
                    CONVJIT_RESIZE_HALF_PIXEL, TestLayout::halo},
        AdjointCase{{1, 2, 4, 3, 2}, {1, 2, 2, 7, 5}, CONVJIT_RESIZE_NEAREST_ROUND_PREFER_FLOOR,
                    CONVJIT_RESIZE_TF_HALF_PIXEL_FOR_NN, TestLayout::nhwc},
        AdjointCase{{1, 1, 9}, {1, 1, 1}, CONVJIT_RESIZE_LINEAR,
                    CONVJIT_RESIZE_PYTORCH_HALF_PIXEL, TestLayout::nchw}));

void expect_invalid(const Status& s, const std::string& needle) {
  EXPECT_EQ(s.code(), CONVJIT_STATUS_INVALID_ARGUMENT) << s.message();
  EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
}

TEST(ResizeErrors, BadInputIsNamed) {
  HostTensor<double> x({1, 2, 4}, TestLayout::nchw), y({1, 2, 8}, TestLayout::nchw);
  HostTensor<double> wrong_c({1, 3, 8}, TestLayout::nchw);
  ResizeParams p(1, CONVJIT_RESIZE_NEAREST);
  const PolicyScope reference(Policy::reference);
  expect_invalid(resize_forward(p, x.desc(), x.data(), wrong_c.desc(), wrong_c.data()),
                 "batch and channels (1, 3) must equal x's (1, 2)");
  p.scale[0] = 0.2;
  int64_t dims[3] = {};
  expect_invalid(resize_output_dims(p, x.desc(), dims), "scale[0] = 0.2 gives an empty output");
  p.scale[0] = 3;
  expect_invalid(resize_forward(p, x.desc(), x.data(), y.desc(), y.data()),
                 "y shape[2] = 8 is not floor(4 * scale 3) = 12");
  p.scale[0] = -1;
  expect_invalid(resize_forward(p, x.desc(), x.data(), y.desc(), y.data()),
                 "scale[0] = -1 must be positive and finite");
  p.scale[0] = 2;
  ASSERT_TRUE(resize_output_dims(p, x.desc(), dims).is_ok());
  EXPECT_EQ(dims[2], 8);
  ResizeParams linear(1, CONVJIT_RESIZE_LINEAR);
  linear.coordinates = CONVJIT_RESIZE_TF_HALF_PIXEL_FOR_NN;
  expect_invalid(resize_forward(linear, x.desc(), x.data(), y.desc(), y.data()),
                 "tf-half-pixel-for-nn applies to nearest modes only");
}

}  // namespace
}  // namespace convjit::test
