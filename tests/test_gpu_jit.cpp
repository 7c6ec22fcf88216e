// JIT kernels on a real GPU against the host reference: random problems of
// every op and the reference model layers, outputs poisoned with NaN first.
// Without a CUDA device every test is skipped with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "cuda/cuda_driver.hpp"
#include "descriptor_builder.hpp"
#include "descriptor_name.hpp"
#include "dispatcher.hpp"
#include "jit/jit_backend.hpp"
#include "model_table.hpp"
#include "operand_layout.hpp"
#include "reference/reference_backend.hpp"
#include "support/problems.hpp"

namespace convjit {
namespace {

constexpr convjit_device_t kGpu{CONVJIT_DEVICE_CUDA, 0};
constexpr convjit_device_t kHost{CONVJIT_DEVICE_HOST, 0};

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
    std::vector<std::unique_ptr<Backend>> gpu_chain, host_chain;
    gpu_chain.push_back(std::make_unique<JitBackend>());
    host_chain.push_back(std::make_unique<ReferenceBackend>());
    gpu_ = std::make_unique<Dispatcher>(std::move(gpu_chain));
    host_ = std::make_unique<Dispatcher>(std::move(host_chain));
  }

  // Runs `d` on the GPU and the host on the same random inputs and compares.
  void check(const OpDescriptor& d, std::mt19937& rng) {
    SCOPED_TRACE(descriptor_name(d));
    const std::size_t esize = element_size(d.dtype);
    auto random_bytes = [&](std::size_t bytes) {
      std::vector<unsigned char> v(bytes);
      std::uniform_real_distribution<double> dist(-1, 1);
      for (std::size_t i = 0; i < bytes / esize; ++i)
        store_element(v.data(), i, d.dtype, dist(rng));
      return v;
    };
    const std::size_t x_bytes = slot_bytes(d, Slot::x), w_bytes = slot_bytes(d, Slot::w);
    const std::size_t y_bytes = slot_bytes(d, Slot::y), out_bytes = output_bytes(d);
    auto x = random_bytes(x_bytes), w = random_bytes(w_bytes), dy = random_bytes(y_bytes);
    std::vector<unsigned char> poison(out_bytes, 0xff), host_out = poison;
    DeviceBuffer gx(x_bytes), gw(w_bytes), gdy(y_bytes), gout(out_bytes);
    gx.upload(x), gw.upload(w), gdy.upload(dy), gout.upload(poison);
    ExecArgs host_args, gpu_args;
    // Only what the op reads: average-pool backward gets no x, as the C API allows.
    const bool uses_x = reads_slot(d, Slot::x), uses_w = reads_slot(d, Slot::w),
               uses_dy = reads_slot(d, Slot::y);
    host_args.x = uses_x ? x.data() : nullptr, gpu_args.x = uses_x ? gx.get() : nullptr;
    host_args.w = uses_w ? w.data() : nullptr, gpu_args.w = uses_w ? gw.get() : nullptr;
    host_args.dy = uses_dy ? dy.data() : nullptr, gpu_args.dy = uses_dy ? gdy.get() : nullptr;
    host_args.out = host_out.data(), gpu_args.out = gout.get();
    host_args.beta = gpu_args.beta = 0.0;  // poisoned outputs must not leak
    const Status gpu = gpu_->execute(d, kGpu, gpu_args);
    ASSERT_TRUE(gpu.is_ok()) << gpu.message();
    ASSERT_TRUE(CudaDriver::instance()
                    .check(CudaDriver::instance().api().stream_synchronize(nullptr), "sync")
                    .is_ok());
    ASSERT_TRUE(host_->execute(d, kHost, host_args).is_ok());
    const auto got = gout.download();
    // f32 accumulates in a different order than the f64-accumulating
    // reference: 1e-4 relative to the magnitude; f16/bf16: 2 output ulps.
    const double rtol = d.dtype == DataType::f32   ? 1e-4
                        : d.dtype == DataType::f16 ? 0x1p-9
                                                   : 0x1p-6;
    for (std::size_t i = 0; i < out_bytes / esize; ++i) {
      const double want = load_element(host_out.data(), i, d.dtype),
                   have = load_element(got.data(), i, d.dtype);
      if (std::isnan(want) && std::isnan(load_element(poison.data(), i, d.dtype)))
        continue;  // gap in a strided output
      ASSERT_FALSE(std::isnan(have)) << "element " << i << " was not written";
      ASSERT_NEAR(have, want, rtol * (1 + std::abs(want)) * 8) << "element " << i;
    }
  }

  std::unique_ptr<Dispatcher> gpu_, host_;
};

TEST_F(GpuJit, RandomConvolutionsInEveryDirectionAndDtype) {
  std::mt19937 rng(2026);
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16})
    for (int i = 0; i < 18; ++i) {
      const test::ConvCase c = test::random_conv_case(rng, 1 + i % 3);
      auto t = test::make_conv_tensors<float>(c);
      auto x = t.x.desc(), w = t.w.desc(), y = t.y.desc();
      x.dtype = w.dtype = y.dtype = static_cast<convjit_dtype_t>(dtype);
      for (Direction dir : {Direction::fwd, Direction::bwddata, Direction::bwdfilt}) {
        auto d = make_conv_descriptor(&t.params, dir, &x, &w, &y);
        ASSERT_TRUE(d.is_ok());
        check(d.value(), rng);
      }
    }
}

TEST_F(GpuJit, RandomPoolingInEveryModeAndDirection) {
  std::mt19937 rng(7);
  for (auto mode : {CONVJIT_POOL_MAX, CONVJIT_POOL_AVG_EXCLUDE_PAD, CONVJIT_POOL_AVG_INCLUDE_PAD})
    for (int i = 0; i < 12; ++i) {
      auto t = test::make_pool_tensors<float>(test::random_pool_case(rng, 1 + i % 3, mode));
      for (Direction dir : {Direction::fwd, Direction::bwd}) {
        auto x = t.x.desc(), y = t.y.desc();
        auto d = make_pool_descriptor(&t.params, dir, &x, &y);
        ASSERT_TRUE(d.is_ok());
        check(d.value(), rng);
      }
    }
}

TEST_F(GpuJit, EveryLayerOfTheReferenceModels) {
  std::mt19937 rng(11);
  for (const char* name : {"resnet50", "yolo11n", "cosmoflow"}) {
    const ModelOptions options{2, std::string(name) == "cosmoflow" ? 32 : 64};
    auto ops = expand_model(*find_model(name), options);
    ASSERT_TRUE(ops.is_ok()) << ops.status().message();
    for (const ModelOp& op : ops.value()) check(op.desc, rng);
  }
}

}  // namespace
}  // namespace convjit
