// The warp-level wrappers on a real GPU against the emulator: each test
// template of tests/emulator_templates (shuffles and votes, vector memory,
// cp.async, ldmatrix, mma.sync in f16, bf16 and tf32) is compiled with
// NVRTC for the device, run on it, and run in the emulator on the same
// inputs.  Shuffles, copies and ldmatrix must match bit for bit; mma
// within the tolerance of support/test_templates.hpp.  Without a CUDA device
// the test is skipped with the reason.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdio>

#include "dispatcher/backends/jit/nvrtc_compiler.hpp"
#include "dispatcher/cuda/device_buffer.hpp"
#include "dispatcher/cuda/gpu_arch.hpp"
#include "support/test_templates.hpp"
#include "test_template_texts.hpp"

namespace convjit {
namespace {

// RAII owner of a loaded module.
class LoadedModule {
 public:
  explicit LoadedModule(const CudaDriver& driver) : driver_(driver) {}
  ~LoadedModule() {
    if (module_ != nullptr) (void)driver_.api().module_unload(module_);
  }
  LoadedModule(const LoadedModule&) = delete;
  LoadedModule& operator=(const LoadedModule&) = delete;
  CUmodule* out() { return &module_; }
  [[nodiscard]] CUmodule get() const { return module_; }

 private:
  const CudaDriver& driver_;
  CUmodule module_ = nullptr;
};

Result<std::vector<float>> run_on_gpu(const std::shared_ptr<DeviceContext>& context,
                                      const std::string& arch, const test::WarpCase& c) {
  const std::string_view text = test::warp_test_template(c.template_name);
  if (text.empty())
    return Status(CONVJIT_STATUS_INTERNAL_ERROR, std::string(c.template_name) + " is not built in");
  KernelSource source;
  source.template_name = c.template_name;
  source.source = test::test_template_prelude(c.threads, c.mode) + std::string(text);
  auto compiled = compile_kernel(source, arch);
  if (!compiled.is_ok()) return compiled.status();
  const CudaDriver& driver = CudaDriver::instance();
  const ContextScope scope = context->enter();
  if (!scope.status().is_ok()) return scope.status();
  LoadedModule module(driver);
  if (Status s = driver.check(driver.api().module_load_data(module.out(),
                                                            compiled.value().cubin.data()),
                              "cuModuleLoadData");
      !s.is_ok())
    return s;
  CUfunction function = nullptr;
  if (Status s = driver.check(
          driver.api().module_get_function(&function, module.get(), "convjit_kernel"),
          "cuModuleGetFunction");
      !s.is_ok())
    return s;
  auto x = DeviceBuffer::allocate(context, c.input.size() * sizeof(float));
  auto y = DeviceBuffer::allocate(context, c.output_size * sizeof(float));
  if (!x.is_ok()) return x.status();
  if (!y.is_ok()) return y.status();
  std::vector<float> output(c.output_size, test::kUnwritten);
  if (Status s = x.value()->upload(c.input.data()); !s.is_ok()) return s;
  if (Status s = y.value()->upload(output.data()); !s.is_ok()) return s;
  void* x_ptr = x.value()->get();
  void* y_ptr = y.value()->get();
  void* none = nullptr;
  float alpha = 1.0f, beta = 0.0f;
  void* args[] = {&x_ptr, &none, &y_ptr, &alpha, &beta, &none};
  const auto blocks = static_cast<unsigned>(c.threads / test::kWarpBlock);
  if (Status s = driver.check(
          driver.api().launch_kernel(function, blocks, 1, 1,
                                     static_cast<unsigned>(test::kWarpBlock), 1, 1, 0, nullptr,
                                     args, nullptr),
          "cuLaunchKernel");
      !s.is_ok())
    return s;
  if (Status s = context->synchronize(); !s.is_ok()) return s;
  if (Status s = y.value()->download(output.data()); !s.is_ok()) return s;
  return output;
}

TEST(GpuWarpWrappers, EachTestTemplateMatchesTheEmulator) {
  auto context = DeviceContext::open(0);
  if (!context.is_ok()) GTEST_SKIP() << "no CUDA device: " << context.status().message();
  const std::string arch = CudaDriver::instance().arch_of(0);
  if (arch_number(arch) < 80) GTEST_SKIP() << arch << " has no cp.async, bf16 or tf32 mma";
  for (const test::WarpCase& c : test::warp_cases()) {
    SCOPED_TRACE(c.label);
    const test::TemplateRun emulated =
        test::run_emulated(c.template_name, c.mode, c.input, c.output_size, c.threads);
    ASSERT_TRUE(emulated.status.is_ok()) << emulated.status.message();
    auto gpu = run_on_gpu(context.value(), arch, c);
    ASSERT_TRUE(gpu.is_ok()) << gpu.status().message();
    double worst = 0;
    std::size_t worst_at = 0;
    for (std::size_t i = 0; i < c.output_size; ++i) {
      const float e = emulated.output[i], g = gpu.value()[i];
      const double error = std::bit_cast<std::uint32_t>(e) == std::bit_cast<std::uint32_t>(g)
                               ? 0.0
                               : std::abs(double{g} - double{e}) / (1.0 + std::abs(double{e}));
      if (!(error <= worst)) worst = std::isnan(error) ? INFINITY : error, worst_at = i;
    }
    std::printf("%-14s %-18s worst relative difference %.3g at %zu\n", c.label.c_str(),
                c.template_name, worst, worst_at);
    EXPECT_LE(worst, c.tolerance) << "element " << worst_at << ": GPU "
                                  << gpu.value()[worst_at] << ", emulator "
                                  << emulated.output[worst_at];
  }
}

}  // namespace
}  // namespace convjit
