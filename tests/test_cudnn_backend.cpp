// The cuDNN backend's host-side parts: how descriptors translate to cuDNN's
// tensors, which problems it declines and why, the f32 math rule, and
// clear statuses where cuDNN, the driver or a GPU is missing.  Results on a
// GPU are checked by test_gpu_backends.cpp.
#include <gtest/gtest.h>

#include <set>


#include "cudnn/cudnn_algorithm.hpp"
#include "cudnn/cudnn_backend.hpp"
#include "cudnn/cudnn_library.hpp"
#include "cudnn/cudnn_problem.hpp"
#include "cuda/cuda_driver.hpp"
#include "descriptor_builder.hpp"
#include "support/jit_problem_set.hpp"
#include "support/problems.hpp"

namespace convjit {
namespace {

using test::ConvCase;
using test::PoolCase;
using test::TestLayout;

OpDescriptor conv_descriptor(const ConvCase& c, Direction direction = Direction::fwd) {
  auto t = test::make_conv_tensors<float>(c);
  auto x = t.x.desc(), w = t.w.desc(), y = t.y.desc();
  auto d = make_conv_descriptor(&t.params, direction, &x, &w, &y);
  EXPECT_TRUE(d.is_ok()) << d.status().message();
  return d.value();
}

OpDescriptor pool_descriptor(const PoolCase& c, Direction direction = Direction::fwd) {
  auto t = test::make_pool_tensors<float>(c);
  auto x = t.x.desc(), y = t.y.desc();
  auto d = make_pool_descriptor(&t.params, direction, &x, &y, c.ceil);
  EXPECT_TRUE(d.is_ok()) << d.status().message();
  return d.value();
}

void expect_declined(const OpDescriptor& d, const std::string& reason) {
  auto p = cudnn_problem(d);
  ASSERT_FALSE(p.is_ok());
  EXPECT_EQ(p.status().code(), CONVJIT_STATUS_UNSUPPORTED);
  EXPECT_NE(p.status().message().find(reason), std::string::npos) << p.status().message();
}

TEST(CudnnProblem, TwoDimensionalNchwConvolutionMapsOneToOne) {
  ConvCase c{2, 6, 8, 2, {9, 7}, {3, 3}, {2, 1}, {1, 1}, {}, {1, 2}};
  auto p = cudnn_problem(conv_descriptor(c));
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  const CudnnProblem& q = p.value();
  EXPECT_EQ(q.spatial_dims, 2);
  EXPECT_EQ(q.x.rank, 4);
  EXPECT_EQ((std::array<int, 4>{q.x.dims[0], q.x.dims[1], q.x.dims[2], q.x.dims[3]}),
            (std::array<int, 4>{2, 6, 9, 7}));
  EXPECT_EQ((std::array<int, 4>{q.x.strides[0], q.x.strides[1], q.x.strides[2], q.x.strides[3]}),
            (std::array<int, 4>{6 * 63, 63, 7, 1}));
  EXPECT_EQ((std::array<int, 4>{q.w.dims[0], q.w.dims[1], q.w.dims[2], q.w.dims[3]}),
            (std::array<int, 4>{8, 3, 3, 3}));
  EXPECT_FALSE(q.filter_channels_last);
  EXPECT_EQ(q.groups, 2);
  EXPECT_EQ(q.pad[0], 1);
  EXPECT_EQ(q.stride[0], 2);
  EXPECT_EQ(q.stride[1], 1);
  EXPECT_EQ(q.dilation[1], 2);
  // y: (9 + 2 - 3) / 2 + 1 = 5 rows, (7 + 2 - 5) + 1 = 5 columns.
  EXPECT_EQ(q.y.dims[2], 5);
  EXPECT_EQ(q.y.dims[3], 5);
}

TEST(CudnnProblem, OneDimensionalProblemsRunAsTwoDimensionalWithAUnitHeight) {
  for (TestLayout layout : {TestLayout::nchw, TestLayout::nhwc}) {
    ConvCase c{2, 4, 5, 1, {11}, {3}, {2}, {1}, {}, {1}, layout};
    const OpDescriptor d = conv_descriptor(c);
    auto p = cudnn_problem(d);
    ASSERT_TRUE(p.is_ok()) << p.status().message();
    const CudnnProblem& q = p.value();
    EXPECT_EQ(q.spatial_dims, 2);
    EXPECT_EQ(q.x.rank, 4);
    EXPECT_EQ(q.x.dims[2], 1);
    EXPECT_EQ(q.x.dims[3], 11);
    // The unit height's stride is a whole row, so a packed NCW (NWC)
    // tensor is a packed NCHW (NHWC) one.
    EXPECT_EQ(q.x.strides[2], q.x.strides[3] * 11);
    EXPECT_EQ(q.x.strides[1], layout == TestLayout::nchw ? 11 : 1);
    EXPECT_EQ(q.w.dims[2], 1);
    EXPECT_EQ(q.w.dims[3], 3);
    EXPECT_EQ(q.window[0], 1);
    EXPECT_EQ(q.pad[0], 0);
    EXPECT_EQ(q.stride[0], 1);
    EXPECT_EQ(q.dilation[0], 1);
    EXPECT_EQ(q.pad[1], 1);
    EXPECT_EQ(q.stride[1], 2);
  }
}

TEST(CudnnProblem, ThreeDimensionalHaloBufferKeepsItsStrides) {
  ConvCase c{1, 2, 4, 1, {6, 5, 4}, {3, 3, 3}, {}, {1, 1, 1}, {}, {}, TestLayout::halo};
  const OpDescriptor d = conv_descriptor(c);
  auto p = cudnn_problem(d);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p.value().x.rank, 5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(p.value().x.strides[i], d.x_strides[i]) << i;
}

TEST(CudnnProblem, FilterFormatIsNchwOrNhwcOnly) {
  OpDescriptor d = conv_descriptor({1, 4, 6, 1, {8, 8}, {3, 3}});
  d.w_strides = contiguous_strides(d.w_dims, 4, true);
  auto p = cudnn_problem(d);
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_TRUE(p.value().filter_channels_last);
  d.w_strides[1] *= 2;  // gaps: neither dense layout
  expect_declined(d, "the filter is neither dense NCHW nor dense NHWC");
}

TEST(CudnnProblem, AsymmetricPaddingIsServedOnlyWhereItDoesNotChangeTheResult) {
  // in 6, k 3, stride 2, pads 1/0: 3 outputs, as with 1/1; cuDNN computes them.
  auto served = cudnn_problem(conv_descriptor({1, 1, 1, 1, {6}, {3}, {2}, {1}, {0}}));
  ASSERT_TRUE(served.is_ok()) << served.status().message();
  EXPECT_EQ(served.value().pad[1], 1);
  // in 5, k 3, pads 0/1: 4 outputs where symmetric 0/0 gives 3.
  expect_declined(conv_descriptor({1, 1, 1, 1, {5, 5}, {3, 3}, {}, {0, 0}, {0, 1}}),
                  "padding 0/1 on the second spatial dim: cuDNN pads both sides alike, and with "
                  "0 on both the output would have 3 entries, not 4");
}

TEST(CudnnProblem, PoolingDeclinesDilationAndCeilShapesThatFloorDoesNotGive) {
  PoolCase dilated{1, 2, {9, 9}, {3, 3}, {1, 1}, {}, {}, {2, 2}};
  expect_declined(pool_descriptor(dilated),
                  "dilation 2 on the first spatial dim: cuDNN pooling has no dilation");
  PoolCase ceil{1, 2, {6}, {3}, {2}};
  ceil.ceil = true;  // ceil((6 - 3) / 2) + 1 = 3, floor gives 2
  expect_declined(pool_descriptor(ceil), "(ceil mode)");
  PoolCase plain{1, 2, {6, 6}, {3, 3}, {2, 2}, {1, 1}};
  EXPECT_TRUE(cudnn_problem(pool_descriptor(plain)).is_ok());
}

TEST(CudnnProblem, AveragePoolingCountingPaddingDeclinesWindowsPastPadEnd) {
  // in 6, window 2, stride 2, pads 1/0, ceil: 4 outputs, as floor with 1/1
  // gives; the last window covers [5, 7) where the input plus pad_end ends
  // at 6.  The reference divides it by 1, cuDNN would by 2.
  PoolCase c{1, 1, {6}, {2}, {2}, {1}, {0}};
  c.ceil = true;
  c.mode = CONVJIT_POOL_AVG_INCLUDE_PAD;
  expect_declined(pool_descriptor(c), "reaches past pad_end 0");
  for (auto mode : {CONVJIT_POOL_MAX, CONVJIT_POOL_AVG_EXCLUDE_PAD}) {
    c.mode = mode;  // padding never counts: the same result as cuDNN's
    auto p = cudnn_problem(pool_descriptor(c));
    EXPECT_TRUE(p.is_ok()) << p.status().message();
  }
}

TEST(CudnnProblem, BiasGradientReducesIntoAOneByKByOneTensor) {
  auto t = test::make_conv_tensors<float>({3, 2, 5, 1, {4, 6}, {1, 1}});
  auto dy = t.y.desc();
  auto d = make_bias_grad_descriptor(&dy);
  ASSERT_TRUE(d.is_ok()) << d.status().message();
  auto p = cudnn_problem(d.value());
  ASSERT_TRUE(p.is_ok()) << p.status().message();
  EXPECT_EQ(p.value().w.rank, 4);
  EXPECT_EQ((std::array<int, 4>{p.value().w.dims[0], p.value().w.dims[1], p.value().w.dims[2],
                                p.value().w.dims[3]}),
            (std::array<int, 4>{1, 5, 1, 1}));
  EXPECT_EQ(p.value().y.dims[1], 5);
}

TEST(CudnnProblem, SizesBeyondThirtyTwoBitsAndUnsupportedKindsAreDeclined) {
  OpDescriptor d = conv_descriptor({2, 1, 1, 1, {4, 4}, {1, 1}});
  d.x_strides[0] = std::int64_t{3} << 30;
  expect_declined(d, "x spans more than 2^31-1 elements");
  OpDescriptor symbolic = conv_descriptor({2, 1, 1, 1, {4, 4}, {1, 1}});
  symbolic.symbolic_batch = 1;
  expect_declined(symbolic, "symbolic-batch");
  OpDescriptor f64 = conv_descriptor({2, 1, 1, 1, {4, 4}, {1, 1}});
  f64.dtype = DataType::f64;
  expect_declined(f64, "f64");
}

// The GPU test's problem sets (test_gpu_backends.cpp): cuDNN serves every
// model layer and every problem of the symmetric random sets; of the
// general sets it declines only for the documented reasons.
TEST(CudnnProblem, ServesEveryModelLayerAndTheSymmetricRandomSets) {
  for (const char* model : {"resnet50", "yolo11n", "cosmoflow"})
    for (const OpDescriptor& d : test::model_descriptors(model, {2, 32})) {
      auto p = cudnn_problem(d);
      EXPECT_TRUE(p.is_ok()) << model << ": " << p.status().message();
    }
  for (bool symmetric : {true, false}) {
    std::mt19937 rng(2026);
    std::vector<OpDescriptor> set = test::random_conv_descriptors(rng, DataType::f32, 60, symmetric);
    for (const OpDescriptor& d : test::random_pool_descriptors(rng, DataType::f32, 30, symmetric))
      set.push_back(d);
    int declined = 0;
    for (const OpDescriptor& d : set) {
      auto p = cudnn_problem(d);
      if (p.is_ok()) continue;
      ++declined;
      const std::string why = p.status().message();
      EXPECT_TRUE(why.starts_with("padding ") || why.starts_with("the pooled output has ") ||
                  why.starts_with("dilation ") || why.starts_with("the last window "))
          << why;
    }
    if (symmetric) {
      EXPECT_EQ(declined, 0);
    } else {
      EXPECT_GT(declined, 0);  // the general sets do reach the rules
    }
  }
}

TEST(CudnnMath, F32StaysOffTf32UnlessAllowed) {
  EXPECT_EQ(initial_math_type(DataType::f32, false), CUDNN_FMA_MATH);
  EXPECT_EQ(initial_math_type(DataType::f32, true), CUDNN_DEFAULT_MATH);
  EXPECT_EQ(initial_math_type(DataType::f16, false), CUDNN_TENSOR_OP_MATH);
  EXPECT_EQ(initial_math_type(DataType::bf16, false), CUDNN_TENSOR_OP_MATH);
  EXPECT_TRUE(math_type_allowed(CUDNN_FMA_MATH, DataType::f32, false));
  for (auto math : {CUDNN_DEFAULT_MATH, CUDNN_TENSOR_OP_MATH, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION}) {
    EXPECT_FALSE(math_type_allowed(math, DataType::f32, false)) << math;
    EXPECT_TRUE(math_type_allowed(math, DataType::f32, true)) << math;
    EXPECT_TRUE(math_type_allowed(math, DataType::f16, false)) << math;
  }
}

// The heuristics' list as convjit filters it: failing entries dropped, the
// math rule applied, each algorithm and math type once, the order kept.
TEST(CudnnAlgorithms, UsableOnesKeepTheHeuristicsOrderUnderTheMathRule) {
  const std::vector<CudnnAlgorithmPerf> ranked{
      {6, CUDNN_STATUS_SUCCESS, CUDNN_TENSOR_OP_MATH, 1 << 20, CUDNN_DETERMINISTIC},
      {1, CUDNN_STATUS_SUCCESS, CUDNN_FMA_MATH, 4096, CUDNN_DETERMINISTIC},
      {2, CUDNN_STATUS_NOT_SUPPORTED, CUDNN_FMA_MATH, 0, CUDNN_DETERMINISTIC},
      {0, CUDNN_STATUS_SUCCESS, CUDNN_FMA_MATH, 0, CUDNN_NON_DETERMINISTIC},
      {1, CUDNN_STATUS_SUCCESS, CUDNN_FMA_MATH, 4096, CUDNN_DETERMINISTIC},  // listed twice
      {1, CUDNN_STATUS_SUCCESS, CUDNN_TENSOR_OP_MATH, 8192, CUDNN_DETERMINISTIC},
  };
  auto ids = [](const std::vector<CudnnAlgorithm>& algorithms) {
    std::vector<std::string> out;
    for (const CudnnAlgorithm& a : algorithms) out.push_back(a.id());
    return out;
  };
  auto f32 = usable_cudnn_algorithms(ranked, DataType::f32, false);
  ASSERT_TRUE(f32.is_ok()) << f32.status().message();
  EXPECT_EQ(ids(f32.value()), (std::vector<std::string>{"algo1-fma", "algo0-fma"}));
  EXPECT_EQ(f32.value()[0].workspace_bytes, 4096u);
  EXPECT_FALSE(f32.value()[1].deterministic);
  EXPECT_EQ(f32.value()[1].summary(), "algorithm 0 (FMA math, non-deterministic), 0 B workspace");

  auto tf32 = usable_cudnn_algorithms(ranked, DataType::f32, true);
  ASSERT_TRUE(tf32.is_ok());
  EXPECT_EQ(ids(tf32.value()), (std::vector<std::string>{"algo6-tensor-op", "algo1-fma",
                                                          "algo0-fma", "algo1-tensor-op"}));
  auto bf16 = usable_cudnn_algorithms(ranked, DataType::bf16, false);
  ASSERT_TRUE(bf16.is_ok());
  EXPECT_EQ(bf16.value().size(), 4u);
  EXPECT_EQ(bf16.value()[0].math, CUDNN_TENSOR_OP_MATH);
}

TEST(CudnnAlgorithms, NoUsableAlgorithmSaysWhyAndHowToAllowTf32) {
  const std::vector<CudnnAlgorithmPerf> tensor_op_only{
      {6, CUDNN_STATUS_SUCCESS, CUDNN_TENSOR_OP_MATH, 0, CUDNN_DETERMINISTIC},
      {2, CUDNN_STATUS_NOT_SUPPORTED, CUDNN_FMA_MATH, 0, CUDNN_DETERMINISTIC}};
  auto none = usable_cudnn_algorithms(tensor_op_only, DataType::f32, false);
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().code(), CONVJIT_STATUS_UNSUPPORTED);
  EXPECT_EQ(none.status().message(),
            "cuDNN's heuristics offer no usable algorithm: algorithm 6 needs tensor-op math "
            "(CONVJIT_ALLOW_TF32=1 would allow TF32)");
  auto empty = usable_cudnn_algorithms({}, DataType::f16, false);
  ASSERT_FALSE(empty.is_ok());
  EXPECT_EQ(empty.status().message(), "cuDNN's heuristics offer no usable algorithm: none works");
}

TEST(CudnnAlgorithms, IdsAreDistinctPerAlgorithmAndMathType) {
  std::set<std::string> ids;
  for (int algorithm = 0; algorithm < 8; ++algorithm)
    for (auto math : {CUDNN_DEFAULT_MATH, CUDNN_FMA_MATH, CUDNN_TENSOR_OP_MATH,
                      CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION}) {
      const std::string id = CudnnAlgorithm{algorithm, 0, math, true}.id();
      EXPECT_EQ(id.find(' '), std::string::npos) << id;  // one token in logs and JSON
      EXPECT_TRUE(ids.insert(id).second) << id;
    }
  EXPECT_TRUE(ids.contains("algo1-tensor-op-with-conversion"));
}

TEST(CudnnBackend, DeclinesTheHostAndMachinesWithoutADriverWithTheReason) {
  CudnnBackend backend;
  const OpDescriptor d = conv_descriptor({1, 2, 2, 1, {4, 4}, {3, 3}});
  const Status host = backend.check_support(d, {CONVJIT_DEVICE_HOST, 0});
  EXPECT_EQ(host.code(), CONVJIT_STATUS_NOT_AVAILABLE);
  EXPECT_EQ(host.message(), "cuDNN serves CUDA devices; the host uses the reference");
  if (CudaDriver::instance().available().is_ok()) GTEST_SKIP() << "this machine has a driver";
  const Status gpu = backend.check_support(d, {CONVJIT_DEVICE_CUDA, 0});
  EXPECT_EQ(gpu.code(), CONVJIT_STATUS_NOT_AVAILABLE);
  EXPECT_NE(gpu.message().find("no CUDA driver"), std::string::npos) << gpu.message();
}

}  // namespace
}  // namespace convjit
