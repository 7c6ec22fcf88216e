// JIT kernels on a real GPU against the host reference: random problems of
// every op and the reference model layers, outputs poisoned with NaN first.
// Without a CUDA device every test is skipped with the reason.
#include <gtest/gtest.h>

#include <random>

#include "cuda/cuda_driver.hpp"
#include "descriptor_builder.hpp"
#include "descriptor_name.hpp"
#include "dispatcher.hpp"
#include "jit/jit_backend.hpp"
#include "model_table.hpp"
#include "operand_layout.hpp"
#include "support/jit_problem_set.hpp"
#include "support/reference_comparison.hpp"

namespace convjit {
namespace {

constexpr convjit_device_t kGpu{CONVJIT_DEVICE_CUDA, 0};

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    EXPECT_TRUE(
        driver()
            .check(driver().api().mem_alloc(&ptr_, std::max<std::size_t>(bytes, 1)), "cuMemAlloc")
            .is_ok());
  }
  ~DeviceBuffer() { (void)driver().api().mem_free(ptr_); }
  void upload(const std::vector<unsigned char>& host) {
    (void)driver().api().memcpy_htod(ptr_, host.data(), bytes_);
  }
  std::vector<unsigned char> download() const {
    std::vector<unsigned char> host(bytes_);
    (void)driver().api().memcpy_dtoh(host.data(), ptr_, bytes_);
    return host;
  }
  void* get() const { return reinterpret_cast<void*>(ptr_); }
  static const CudaDriver& driver() { return CudaDriver::instance(); }

 private:
  CUdeviceptr ptr_ = 0;
  std::size_t bytes_;
};

class GpuJit : public ::testing::Test {
 protected:
  void SetUp() override {
    const Status& available = CudaDriver::instance().available();
    if (!available.is_ok()) GTEST_SKIP() << "no CUDA device: " << available.message();
    std::vector<std::unique_ptr<Backend>> gpu_chain;
    gpu_chain.push_back(std::make_unique<JitBackend>());
    gpu_ = std::make_unique<Dispatcher>(std::move(gpu_chain));
  }

  // Runs `d` on the GPU and compares with the host reference.
  void check(const OpDescriptor& d, std::mt19937& rng) {
    SCOPED_TRACE(descriptor_name(d));
    const test::HostOperands host = test::random_operands(d, rng);
    DeviceBuffer gx(host.x.size()), gw(host.w.size()), gdy(host.dy.size()), gout(host.out.size());
    gx.upload(host.x), gw.upload(host.w), gdy.upload(host.dy), gout.upload(host.out);
    ExecArgs args = host.args(d, gout.get());
    if (args.x) args.x = gx.get();
    if (args.w) args.w = gw.get();
    if (args.dy) args.dy = gdy.get();
    const Status gpu = gpu_->execute(d, kGpu, args);
    ASSERT_TRUE(gpu.is_ok()) << gpu.message();
    ASSERT_TRUE(CudaDriver::instance()
                    .check(CudaDriver::instance().api().stream_synchronize(nullptr), "sync")
                    .is_ok());
    test::expect_matches_reference(d, host, gout.download());
  }

  std::unique_ptr<Dispatcher> gpu_;
};

TEST_F(GpuJit, RandomConvolutionsInEveryDirectionAndDtype) {
  std::mt19937 rng(2026);
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16})
    for (const OpDescriptor& d : test::random_conv_descriptors(rng, dtype, 18)) check(d, rng);
}

TEST_F(GpuJit, RandomPoolingInEveryModeAndDirection) {
  std::mt19937 rng(7);
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16})
    for (const OpDescriptor& d : test::random_pool_descriptors(rng, dtype, 12)) check(d, rng);
}

TEST_F(GpuJit, RandomBiasGradients) {
  std::mt19937 rng(5);
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16})
    for (const OpDescriptor& d : test::random_bias_descriptors(rng, dtype, 12)) check(d, rng);
}

TEST_F(GpuJit, EveryLayerOfTheReferenceModels) {
  std::mt19937 rng(11);
  for (const char* name : {"resnet50", "yolo11n", "cosmoflow"})
    for (const OpDescriptor& d :
         test::model_descriptors(name, {2, std::string(name) == "cosmoflow" ? 32 : 64}))
      check(d, rng);
}

}  // namespace
}  // namespace convjit
