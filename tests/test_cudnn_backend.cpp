// The cuDNN backend's host-side parts: how descriptors translate to cuDNN's
// tensors, which problems it declines and why, the f32 math rule, and
// clear statuses where cuDNN, the driver or a GPU is missing.  Results on a
// GPU are checked by test_gpu_backends.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>


#include "dispatcher/backends/cudnn/cudnn_algorithm.hpp"
#include "dispatcher/backends/cudnn/cudnn_backend.hpp"
#include "dispatcher/backends/cudnn/cudnn_library.hpp"
#include "dispatcher/backends/cudnn/cudnn_problem.hpp"
#include "dispatcher/cuda/cuda_driver.hpp"
#include "dispatcher/descriptor/descriptor_builder.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/operand_layout.hpp"
#include "support/jit_problem_set.hpp"
#include "support/problems.hpp"
#include "support/tie_free_pool_input.hpp"

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

// Max-pool backward recomputes y into scratch that cudnnPoolingBackward
// reads with dy's descriptor (it refuses a y and dy whose strides differ),
// so the scratch must span as far as dy's own layout does.
TEST(CudnnProblem, MaxPoolBackwardScratchSpansDysOwnLayout) {
  for (TestLayout layout : {TestLayout::nchw, TestLayout::nhwc, TestLayout::halo})
    for (bool three_d : {false, true}) {
      PoolCase c{2, 3, {7, 6}, {3, 2}, {2, 1}, {1, 0}, {1, 0}};
      if (three_d) c = {2, 3, {5, 7, 6}, {2, 3, 2}, {1, 2, 1}, {0, 1, 0}, {0, 1, 0}};
      c.layout = layout;
      SCOPED_TRACE(std::string(test::layout_name(layout)) + (three_d ? " 3D" : " 2D"));
      const OpDescriptor d = pool_descriptor(c, Direction::bwd);
      auto p = cudnn_problem(d);
      ASSERT_TRUE(p.is_ok()) << p.status().message();
      const CudnnTensorShape& dy = p.value().y;
      std::size_t last = 0;  // the last element's offset, from the descriptor itself
      for (int i = 0; i < d.rank(); ++i) {
        EXPECT_EQ(dy.dims[i], d.y_dims[i]) << i;
        EXPECT_EQ(dy.strides[i], d.y_strides[i]) << i;
        last += static_cast<std::size_t>((d.y_dims[i] - 1) * d.y_strides[i]);
      }
      EXPECT_EQ(element_span(dy), last + 1);
      std::size_t count = 1;
      for (int i = 0; i < dy.rank; ++i) count *= static_cast<std::size_t>(dy.dims[i]);
      if (layout == TestLayout::halo) {
        EXPECT_GT(element_span(dy), count);
      } else {
        EXPECT_EQ(element_span(dy), count);
      }
    }
}

// The values in window (n, c, origin) of a pool over `d`'s x, padding left out.
std::vector<double> window_values(const OpDescriptor& d, const std::vector<unsigned char>& x,
                                  std::int64_t n, std::int64_t c, const Dims3& origin) {
  std::vector<double> values;
  std::int64_t cells = 1;
  for (int i = 0; i < d.spatial_dims; ++i) cells *= d.window[i];
  for (std::int64_t cell = 0; cell < cells; ++cell) {
    std::int64_t offset = n * d.x_strides[0] + c * d.x_strides[1], rest = cell;
    bool inside = true;
    for (int i = d.spatial_dims - 1; i >= 0; --i) {
      const std::int64_t at = origin[i] + rest % d.window[i];
      rest /= d.window[i];
      inside = inside && at >= 0 && at < d.x_dims[i + 2];
      offset += at * d.x_strides[i + 2];
    }
    if (inside) values.push_back(load_element(x.data(), static_cast<std::size_t>(offset), d.dtype));
  }
  return values;
}

// cuDNN's max-pool backward is compared on such inputs (test_gpu_backends):
// here, on the host, no window of cuDNN's random pool sets holds its
// maximum twice, in bf16 where random inputs tie most.
TEST(TieFreePoolInput, NoWindowOfTheCudnnSetsHoldsItsMaximumTwice) {
  std::mt19937 rng(7);
  int windows = 0;
  for (const OpDescriptor& d : test::random_pool_descriptors(rng, DataType::bf16, 12, true)) {
    if (d.pool_mode != PoolingMode::max || d.direction != Direction::bwd) continue;
    SCOPED_TRACE(descriptor_name(d));
    std::vector<unsigned char> x(slot_bytes(d, Slot::x));
    test::make_pool_input_tie_free(d, x, rng);
    std::int64_t outputs = 1;
    for (int i = 0; i < d.spatial_dims; ++i) outputs *= d.y_dims[i + 2];
    for (std::int64_t n = 0; n < d.x_dims[0]; ++n)
      for (std::int64_t c = 0; c < d.x_dims[1]; ++c)
        for (std::int64_t o = 0; o < outputs; ++o) {
          Dims3 origin{};
          std::int64_t rest = o;
          for (int i = d.spatial_dims - 1; i >= 0; --i) {
            origin[i] = (rest % d.y_dims[i + 2]) * d.stride[i] - d.pad_begin[i];
            rest /= d.y_dims[i + 2];
          }
          const auto values = window_values(d, x, n, c, origin);
          if (values.empty()) continue;
          const double top = *std::max_element(values.begin(), values.end());
          ASSERT_EQ(std::count(values.begin(), values.end(), top), 1) << "window " << o;
          ++windows;
        }
  }
  EXPECT_GT(windows, 400);  // every case was looked at
}

TEST(CudnnProblem, ElementSpanOfAnEmptyTensorIsZero) {
  CudnnTensorShape empty{4, {2, 0, 3, 3}, {0, 9, 3, 1}};
  EXPECT_EQ(element_span(empty), 0u);
  CudnnTensorShape one{4, {1, 1, 1, 1}, {1, 1, 1, 1}};
  EXPECT_EQ(element_span(one), 1u);
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
  // bf16: cuDNN returned NOT_SUPPORTED for every call on an H200 (cuDNN
  // 9.14), so the backend declines it up front and the JIT serves it.
  OpDescriptor bf16 = d.value();
  bf16.dtype = DataType::bf16;
  expect_declined(bf16, "does not take bf16");
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
            "cuDNN's heuristics offer no usable algorithm: algorithm 6 needs tensor-op math; "
            "algorithm 2 (FMA math) failed with status 3000 "
            "(CONVJIT_ALLOW_TF32=1 would allow TF32)");
  // With cuDNN's own names for the statuses, as the backend passes them.
  auto named = usable_cudnn_algorithms(
      tensor_op_only, DataType::bf16, false, [](cudnnStatus_t) { return "CUDNN_STATUS_X"; });
  ASSERT_TRUE(named.is_ok());
  const std::vector<CudnnAlgorithmPerf> failing{
      {1, CUDNN_STATUS_NOT_SUPPORTED_SUBLIBRARY_UNAVAILABLE, CUDNN_FMA_MATH, 0,
       CUDNN_DETERMINISTIC}};
  auto unavailable = usable_cudnn_algorithms(failing, DataType::f16, false,
                                             [](cudnnStatus_t) { return "CUDNN_STATUS_X"; });
  ASSERT_FALSE(unavailable.is_ok());
  EXPECT_EQ(unavailable.status().message(),
            "cuDNN's heuristics offer no usable algorithm: algorithm 1 (FMA math) failed with "
            "status 3009 (CUDNN_STATUS_X)");
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

// The build-time choice (cudnn_algorithm.hpp): cuDNN's workspace query
// confirms each algorithm, the cap passes over the greedy ones, and an
// algorithm whose workspace cannot be allocated gives way to the next.
TEST(CudnnAlgorithms, TheBuildPassesOverRefusedAndGreedyAlgorithmsInTheHeuristicsOrder) {
  const std::vector<CudnnAlgorithm> ranked{{6, 1 << 20, CUDNN_TENSOR_OP_MATH, true},
                                           {1, 100, CUDNN_FMA_MATH, true},
                                           {0, 0, CUDNN_FMA_MATH, true},
                                           {2, 8, CUDNN_FMA_MATH, true}};
  // cuDNN refuses algorithm 1 for these descriptors; the query's sizes
  // replace the heuristics' estimates.
  const WorkspaceQuery query = [](const CudnnAlgorithm& a) -> Result<std::size_t> {
    if (a.algorithm == 1)
      return Status(CONVJIT_STATUS_UNSUPPORTED,
                    "cudnnGetConvolutionForwardWorkspaceSize failed: CUDNN_STATUS_NOT_SUPPORTED "
                    "(3000)");
    return a.algorithm == 6 ? std::size_t{3} << 30 : a.workspace_bytes + 16;
  };
  std::string passed_over;
  const auto confirmed = confirmed_cudnn_algorithms(ranked, workspace_cap(1 << 30, 2 << 30),
                                                    query, passed_over);
  ASSERT_EQ(confirmed.size(), 2u);
  EXPECT_EQ(confirmed[0].id(), "algo0-fma");
  EXPECT_EQ(confirmed[0].workspace_bytes, 16u);
  EXPECT_EQ(confirmed[1].id(), "algo2-fma");
  EXPECT_EQ(confirmed[1].workspace_bytes, 24u);
  EXPECT_EQ(passed_over,
            "algo6-tensor-op: needs 3221225472 B of workspace, over the cap of 1073741824 B "
            "(CONVJIT_CUDNN_WORKSPACE_LIMIT or the device's free memory); algo1-fma: "
            "cudnnGetConvolutionForwardWorkspaceSize failed: CUDNN_STATUS_NOT_SUPPORTED (3000)");

  // Algorithm 0's workspace cannot be had: algorithm 2 serves.
  auto chosen = first_workable_cudnn_algorithm(
      std::span<const CudnnAlgorithm>(confirmed),
      [](const CudnnAlgorithm& a) -> Result<int> {
        if (a.algorithm == 0) return Status(CONVJIT_STATUS_OUT_OF_MEMORY, "cuMemAlloc failed");
        return a.algorithm;
      },
      passed_over);
  ASSERT_TRUE(chosen.is_ok()) << chosen.status().message();
  EXPECT_EQ(chosen.value(), 2);
  EXPECT_NE(passed_over.find("; algo0-fma: cuMemAlloc failed"), std::string::npos) << passed_over;
}

TEST(CudnnAlgorithms, WhenNoneCanRunTheErrorNamesEveryOnePassedOver) {
  std::string passed_over = "algo6-tensor-op: needs 9 B of workspace, over the cap of 8 B";
  const std::vector<CudnnAlgorithm> confirmed{{1, 4, CUDNN_FMA_MATH, true}};
  auto none = first_workable_cudnn_algorithm(
      std::span<const CudnnAlgorithm>(confirmed),
      [](const CudnnAlgorithm&) -> Result<int> {
        return Status(CONVJIT_STATUS_OUT_OF_MEMORY, "cuMemAlloc failed: out of memory (2)");
      },
      passed_over);
  ASSERT_FALSE(none.is_ok());
  EXPECT_EQ(none.status().code(), CONVJIT_STATUS_OUT_OF_MEMORY);
  EXPECT_EQ(none.status().message(),
            "cuMemAlloc failed: out of memory (2) (passed over: algo6-tensor-op: needs 9 B of "
            "workspace, over the cap of 8 B; algo1-fma: cuMemAlloc failed: out of memory (2))");
  std::string nothing_confirmed = "algo1-fma: needs 9 B of workspace, over the cap of 0 B";
  auto empty = first_workable_cudnn_algorithm(
      std::span<const CudnnAlgorithm>(), [](const CudnnAlgorithm&) -> Result<int> { return 0; },
      nothing_confirmed);
  ASSERT_FALSE(empty.is_ok());
  EXPECT_EQ(empty.status().code(), CONVJIT_STATUS_UNSUPPORTED);
  EXPECT_EQ(empty.status().message(),
            "cuDNN offers no algorithm that can run here (passed over: algo1-fma: needs 9 B of "
            "workspace, over the cap of 0 B)");
}

TEST(CudnnAlgorithms, TheCapIsTheSettingOrTheFreeMemoryWhicheverIsLess) {
  EXPECT_EQ(workspace_cap(std::size_t{1} << 30, std::size_t{80} << 30), std::size_t{1} << 30);
  EXPECT_EQ(workspace_cap(std::size_t{1} << 30, 512u << 20), 512u << 20);
  EXPECT_EQ(workspace_cap(0, std::size_t{80} << 30), 0u);
}

TEST(CudnnBackend, DeclinesTheHostAndMachinesWithoutADriverWithTheReason) {
  CudnnBackend backend;
  const OpDescriptor d = conv_descriptor({1, 2, 2, 1, {4, 4}, {3, 3}});
  const Status host = backend.check_support(d, {CONVJIT_DEVICE_HOST, 0});
  EXPECT_EQ(host.code(), CONVJIT_STATUS_NOT_AVAILABLE);
  EXPECT_EQ(host.message(), "cuDNN serves CUDA devices; the host uses oneDNN and the reference");
  if (CudaDriver::instance().available().is_ok()) GTEST_SKIP() << "this machine has a driver";
  const Status gpu = backend.check_support(d, {CONVJIT_DEVICE_CUDA, 0});
  EXPECT_EQ(gpu.code(), CONVJIT_STATUS_NOT_AVAILABLE);
  EXPECT_NE(gpu.message().find("no CUDA driver"), std::string::npos) << gpu.message();
}

}  // namespace
}  // namespace convjit
