// The GPU backends (the JIT and cuDNN) on a real GPU against the host
// reference: random problems of every op and the reference model layers,
// outputs poisoned with NaN first.  cuDNN gets the random sets with
// symmetric padding, floor-mode pools and no pool dilation, which it
// expresses (cudnn_problem.hpp; test_cudnn_backend.cpp checks that it
// declines none of them); the JIT gets the general sets.  Without a CUDA
// device every test is skipped with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

#include "cuda/device_buffer.hpp"
#include "cudnn/cudnn_backend.hpp"
#include "descriptor_builder.hpp"
#include "descriptor_name.hpp"
#include "dispatcher.hpp"
#include "jit/jit_backend.hpp"
#include "model_table.hpp"
#include "operand_layout.hpp"
#include "support/jit_problem_set.hpp"
#include "support/reference_comparison.hpp"
#include "support/temp_directory.hpp"

namespace convjit {
namespace {

constexpr convjit_device_t kGpu{CONVJIT_DEVICE_CUDA, 0};

class GpuBackend : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto context = DeviceContext::open(0);
    if (!context.is_ok()) GTEST_SKIP() << "no CUDA device: " << context.status().message();
    context_ = context.value();
    std::vector<std::unique_ptr<Backend>> gpu_chain;
    if (GetParam() == "jit") gpu_chain.push_back(std::make_unique<JitBackend>());
    if (GetParam() == "cudnn") gpu_chain.push_back(std::make_unique<CudnnBackend>());
    backend_ = gpu_chain.front().get();
    gpu_ = std::make_unique<Dispatcher>(std::move(gpu_chain));
  }

  // cuDNN's random sets stay within what it expresses.
  bool symmetric() const { return GetParam() == "cudnn"; }

  // Runs `d` on the GPU through the dispatcher and compares with the host
  // reference.
  void check(const OpDescriptor& d, std::mt19937& rng) {
    check_with(d, rng, [&](const ExecArgs& args) { return gpu_->execute(d, kGpu, args); });
  }

  // The same, with `run` calling the GPU.
  void check_with(const OpDescriptor& d, std::mt19937& rng,
                  const std::function<Status(const ExecArgs&)>& run) {
    SCOPED_TRACE(descriptor_name(d));
    const test::HostOperands host = test::random_operands(d, rng);
    const Status support = backend_->check_support(d, kGpu);
    ASSERT_TRUE(support.is_ok()) << support.message();
    auto gx = staged(host.x), gw = staged(host.w), gdy = staged(host.dy), gout = staged(host.out);
    ExecArgs args = host.args(d, gout->get());
    if (args.x) args.x = gx->get();
    if (args.w) args.w = gw->get();
    if (args.dy) args.dy = gdy->get();
    const Status gpu = run(args);
    ASSERT_TRUE(gpu.is_ok()) << gpu.message();
    const Status synced = context_->synchronize();
    ASSERT_TRUE(synced.is_ok()) << synced.message();
    std::vector<unsigned char> got(host.out.size());
    ASSERT_TRUE(gout->download(got.data()).is_ok());
    test::expect_matches_reference(d, host, got);
  }

  // A device copy of `host`.
  std::unique_ptr<DeviceBuffer> staged(const std::vector<unsigned char>& host) {
    auto buffer = DeviceBuffer::allocate(context_, host.size());
    EXPECT_TRUE(buffer.is_ok()) << buffer.status().message();
    EXPECT_TRUE(buffer.value()->upload(host.data()).is_ok());
    return std::move(buffer).value();
  }

  std::shared_ptr<DeviceContext> context_;
  Backend* backend_ = nullptr;
  std::unique_ptr<Dispatcher> gpu_;
};

TEST_P(GpuBackend, RandomConvolutionsInEveryDirectionAndDtype) {
  std::mt19937 rng(2026);
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16})
    for (const OpDescriptor& d : test::random_conv_descriptors(rng, dtype, 18, symmetric())) check(d, rng);
}

TEST_P(GpuBackend, RandomPoolingInEveryModeAndDirection) {
  std::mt19937 rng(7);
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16})
    for (const OpDescriptor& d : test::random_pool_descriptors(rng, dtype, 12, symmetric())) check(d, rng);
}

TEST_P(GpuBackend, RandomBiasGradients) {
  std::mt19937 rng(5);
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16})
    for (const OpDescriptor& d : test::random_bias_descriptors(rng, dtype, 12)) check(d, rng);
}

TEST_P(GpuBackend, EveryLayerOfTheReferenceModels) {
  std::mt19937 rng(11);
  for (const char* name : {"resnet50", "yolo11n", "cosmoflow"})
    for (const OpDescriptor& d :
         test::model_descriptors(name, {2, std::string(name) == "cosmoflow" ? 32 : 64}))
      check(d, rng);
}

// Each variant the tuned policy may choose (every usable cuDNN algorithm)
// is correct on its own, not only the heuristics' first.
TEST_P(GpuBackend, EveryVariantMatchesTheReference) {
  std::mt19937 rng(13);
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16})
    for (const OpDescriptor& d : test::random_conv_descriptors(rng, dtype, 6, symmetric())) {
      BuildTrace trace;
      auto variants = backend_->build_variants(d, kGpu, trace);
      ASSERT_TRUE(variants.is_ok()) << variants.status().message();
      ASSERT_FALSE(variants.value().empty());
      for (const KernelVariant& v : variants.value()) {
        SCOPED_TRACE("variant " + v.id);
        check_with(d, rng, [&](const ExecArgs& args) { return v.kernel->execute(args); });
      }
    }
}

INSTANTIATE_TEST_SUITE_P(JitAndCudnn, GpuBackend, ::testing::Values("jit", "cudnn"),
                         [](const ::testing::TestParamInfo<std::string>& param) {
                           return param.param;
                         });

// The tuned policy on a GPU: the JIT and every usable cuDNN algorithm are
// timed with CUDA events, the winner is checked and stored, and a later
// dispatcher rebuilds it from the stored decision.
TEST(GpuTunedPolicy, MeasuresTheJitAndEachCudnnAlgorithmAndStoresTheWinner) {
  auto context = DeviceContext::open(0);
  if (!context.is_ok()) GTEST_SKIP() << "no CUDA device: " << context.status().message();
  const test::TempDirectory cache("convjit-gpu-tuning");
  ASSERT_EQ(convjit_set_cache_path(cache.string().c_str()), CONVJIT_STATUS_SUCCESS);
  ASSERT_EQ(convjit_set_policy("tuned"), CONVJIT_STATUS_SUCCESS);
  auto both = [] {
    std::vector<std::unique_ptr<Backend>> chain;
    chain.push_back(std::make_unique<JitBackend>());
    chain.push_back(std::make_unique<CudnnBackend>());
    return std::make_unique<Dispatcher>(std::move(chain));
  };
  const auto ops = test::model_descriptors("resnet50", {8, 64});
  const auto conv3x3 = std::find_if(ops.begin(), ops.end(), [](const OpDescriptor& op) {
    return op.is_conv() && op.direction == Direction::fwd && op.w_dims[3] == 3;
  });
  ASSERT_NE(conv3x3, ops.end());
  const OpDescriptor& d = *conv3x3;
  auto first = both();
  auto measured = first->resolve(d, kGpu);
  ASSERT_TRUE(measured.is_ok()) << measured.status().message();
  const std::string& why = measured.value()->reason;
  EXPECT_NE(why.find("measured: "), std::string::npos) << why;
  EXPECT_NE(why.find("jit "), std::string::npos) << why;
  EXPECT_NE(why.find("cudnn[algo"), std::string::npos) << why;
  EXPECT_NE(why.find("decision saved as decisions/v1/"), std::string::npos) << why;
  auto later = both();
  auto stored = later->resolve(d, kGpu);
  ASSERT_TRUE(stored.is_ok()) << stored.status().message();
  EXPECT_EQ(stored.value()->backend, measured.value()->backend);
  EXPECT_NE(stored.value()->reason.find("tuning decision stored earlier"), std::string::npos)
      << stored.value()->reason;
  (void)convjit_set_policy(nullptr);
  (void)convjit_set_cache_path(nullptr);
}

}  // namespace
}  // namespace convjit
