// Runs a test template (tests/emulator_templates) on a GPU as
// support/test_templates.hpp's run_emulated() runs it in the emulator: the
// same prelude, grid, input and output, and the same tensor maps, encoded
// by the driver over the device's buffers.  For the GPU comparison tests.
#pragma once

#include <cuda.h>

#include <memory>
#include <string>
#include <vector>

#include "dispatcher/backends/jit/nvrtc_compiler.hpp"
#include "dispatcher/cuda/context_scope.hpp"
#include "dispatcher/cuda/device_buffer.hpp"
#include "dispatcher/cuda/kernel_launch.hpp"
#include "dispatcher/tensor_maps/tensor_map_encoder.hpp"
#include "support/test_templates.hpp"
#include "test_template_texts.hpp"

namespace convjit::test {

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

struct GpuTemplateRun {
  const char* template_name = nullptr;
  long long mode = 0;
  std::vector<float> input;
  std::size_t output_size = 0;
  long long threads = kWarpBlock;
  // Given: the kernel takes a tensor_maps_t parameter (common/tensor_map.cuh).
  std::vector<TensorMapArgument> tensor_maps;
  std::size_t dynamic_shared_bytes = 0;  // opted into beyond 48 KiB
  unsigned cluster_blocks = 1;           // launched in clusters of these
};

inline Result<CUfunction> load_test_kernel(const std::string& arch, const GpuTemplateRun& run,
                                           LoadedModule& module) {
  const std::string_view text = warp_test_template(run.template_name);
  if (text.empty())
    return Status(CONVJIT_STATUS_INTERNAL_ERROR,
                  std::string(run.template_name) + " is not built in");
  KernelSource source;
  source.template_name = run.template_name;
  source.source = test_template_prelude(run.threads, run.mode) + std::string(text);
  auto compiled = compile_kernel(source, arch);
  if (!compiled.is_ok()) return compiled.status();
  const CudaDriver& driver = CudaDriver::instance();
  if (Status s =
          driver.check(driver.api().module_load_data(module.out(), compiled.value().cubin.data()),
                       "cuModuleLoadData");
      !s.is_ok())
    return s;
  CUfunction function = nullptr;
  if (Status s =
          driver.check(driver.api().module_get_function(&function, module.get(), "convjit_kernel"),
                       "cuModuleGetFunction");
      !s.is_ok())
    return s;
  if (run.dynamic_shared_bytes > kStaticSharedLimit)
    if (Status s = driver.check(driver.api().func_set_attribute(
                                    function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    static_cast<int>(run.dynamic_shared_bytes)),
                                "cuFuncSetAttribute");
        !s.is_ok())
      return s;
  return function;
}

inline Result<std::vector<float>> run_on_gpu(const std::shared_ptr<DeviceContext>& context,
                                             const std::string& arch, const GpuTemplateRun& run) {
  const CudaDriver& driver = CudaDriver::instance();
  const ContextScope scope = context->enter();
  if (!scope.status().is_ok()) return scope.status();
  LoadedModule module(driver);
  auto function = load_test_kernel(arch, run, module);
  if (!function.is_ok()) return function.status();
  auto x = DeviceBuffer::allocate(context, run.input.size() * sizeof(float));
  auto y = DeviceBuffer::allocate(context, run.output_size * sizeof(float));
  if (!x.is_ok()) return x.status();
  if (!y.is_ok()) return y.status();
  std::vector<float> output(run.output_size, kUnwritten);
  if (Status s = x.value()->upload(run.input.data()); !s.is_ok()) return s;
  if (Status s = y.value()->upload(output.data()); !s.is_ok()) return s;
  void* x_ptr = x.value()->get();
  void* y_ptr = y.value()->get();
  auto maps = encode_tensor_maps(driver, run.tensor_maps, {x_ptr, nullptr, y_ptr, nullptr});
  if (!maps.is_ok()) return maps.status();
  void* none = nullptr;
  float alpha = 1.0f, beta = 0.0f;
  void* args[] = {&x_ptr, &none, &y_ptr, &alpha, &beta, &none, &none, &none, &maps.value()};
  const auto blocks = static_cast<unsigned>(run.threads / kWarpBlock);
  const auto dynamic = static_cast<unsigned>(run.dynamic_shared_bytes);
  const LaunchShape shape{blocks, static_cast<unsigned>(kWarpBlock), dynamic, run.cluster_blocks};
  if (Status s = launch_kernel(driver, function.value(), shape, nullptr, args); !s.is_ok())
    return s;
  if (Status s = context->synchronize(); !s.is_ok()) return s;
  if (Status s = y.value()->download(output.data()); !s.is_ok()) return s;
  return output;
}

}  // namespace convjit::test
