// Every JIT kernel template, compiled for the host emulator and launched
// exactly as on a GPU (same entries, grid, block size, constants and
// workspace), against the host reference on the shared JIT problem set:
// random convolutions, pools and bias gradients in f32, f16 and bf16 over
// 1D/2D/3D, strides, padding, dilation, groups and NCHW/NHWC/halo layouts,
// and every layer of the reference models at batch 1 and small images.
// Outputs start poisoned; any out-of-bounds access, race or unwritten
// element fails the launch itself.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "dispatcher/backends/emulator/emulated_template.hpp"
#include "dispatcher/backends/emulator/emulator_backend.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/dispatcher.hpp"
#include "dispatcher/settings.hpp"
#include "support/host_device.hpp"
#include "support/jit_problem_set.hpp"
#include "support/reduced_run.hpp"
#include "support/reference_comparison.hpp"

namespace convjit {
namespace {

using test::kHost;
constexpr DataType kJitDtypes[] = {DataType::f32, DataType::f16, DataType::bf16};

class EmulatedKernels : public ::testing::Test {
 protected:
  // The emulator serves only under its own policy, as a user selects it.
  EmulatedKernels() {
    SettingsStore::instance().set_policy(Policy::emulate);
    std::vector<std::unique_ptr<Backend>> chain;
    chain.push_back(std::make_unique<EmulatorBackend>());
    emulator_ = std::make_unique<Dispatcher>(std::move(chain));
  }
  ~EmulatedKernels() override { SettingsStore::instance().set_policy(std::nullopt); }

  void check(const OpDescriptor& d, std::mt19937& rng, double alpha = 1.0, double beta = 0.0) {
    const test::HostOperands host = test::random_operands(d, rng, alpha, beta);
    std::vector<unsigned char> out = host.out;
    const Status s = emulator_->execute(d, kHost, host.args(d, out.data()));
    ASSERT_TRUE(s.is_ok()) << descriptor_name(d) << ": " << s.message();
    test::expect_matches_reference(d, host, out);
  }

  std::unique_ptr<Dispatcher> emulator_;
};

TEST_F(EmulatedKernels, EveryTemplateTheJitUsesHasAnEmulatedBuildInEveryDtype) {
  std::mt19937 rng(1);
  std::set<std::string> used;
  for (DataType dtype : kJitDtypes) {
    std::vector<OpDescriptor> all = test::random_conv_descriptors(rng, dtype, 1);
    for (auto& d : test::random_pool_descriptors(rng, dtype, 1)) all.push_back(d);
    for (auto& d : test::random_bias_descriptors(rng, dtype, 1)) all.push_back(d);
    for (const OpDescriptor& d : all) {
      auto source = kernel_source(d);
      ASSERT_TRUE(source.is_ok());
      used.insert(source.value().template_name);
      EXPECT_NE(emulator::find_emulated_template(emulator::emulated_templates(),
                                                 source.value().template_name, dtype,
                                                 source.value().variant),
                nullptr)
          << source.value().template_name << " " << dtype_name(dtype);
    }
  }
  // conv fwd/bwddata/bwdfilt (GEMM or direct), pool fwd/bwd, bias grad, and
  // the depthwise kernels where a random case is one
  EXPECT_GE(used.size(), 6u);
}

TEST_F(EmulatedKernels, RandomConvolutionsInEveryDirection) {
  std::mt19937 rng(2026);
  for (DataType dtype : kJitDtypes)
    for (const OpDescriptor& d : test::random_conv_descriptors(rng, dtype, 120)) check(d, rng);
}

TEST_F(EmulatedKernels, RandomPoolingInEveryModeAndDirection) {
  std::mt19937 rng(7);
  for (DataType dtype : kJitDtypes)
    for (const OpDescriptor& d : test::random_pool_descriptors(rng, dtype, 40)) check(d, rng);
}

TEST_F(EmulatedKernels, RandomBiasGradients) {
  std::mt19937 rng(5);
  for (DataType dtype : kJitDtypes)
    for (const OpDescriptor& d : test::random_bias_descriptors(rng, dtype, 40)) check(d, rng);
}

TEST_F(EmulatedKernels, AlphaAndBetaBlendIntoTheExistingOutput) {
  std::mt19937 rng(3);
  for (DataType dtype : kJitDtypes) {
    std::vector<OpDescriptor> all = test::random_conv_descriptors(rng, dtype, 4);
    for (auto& d : test::random_pool_descriptors(rng, dtype, 2)) all.push_back(d);
    for (auto& d : test::random_bias_descriptors(rng, dtype, 3)) all.push_back(d);
    for (const OpDescriptor& d : all) check(d, rng, 0.5, 0.25);
  }
}

TEST_F(EmulatedKernels, EveryResNet50Layer) {
  std::mt19937 rng(11);
  for (const OpDescriptor& d : test::sweep(test::model_descriptors("resnet50", {1, 32})))
    check(d, rng);
}

TEST_F(EmulatedKernels, EveryYolo11nLayerInChannelsLastF16) {
  std::mt19937 rng(12);
  for (const OpDescriptor& d :
       test::sweep(test::model_descriptors("yolo11n", {1, 64, true, DataType::f16})))
    check(d, rng);
}

TEST_F(EmulatedKernels, EveryCosmoFlowLayerInBf16) {
  std::mt19937 rng(13);
  for (const OpDescriptor& d :
       test::sweep(test::model_descriptors("cosmoflow", {1, 32, false, DataType::bf16})))
    check(d, rng);
}

}  // namespace
}  // namespace convjit
