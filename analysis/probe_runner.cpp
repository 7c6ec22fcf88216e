#include "analysis/probe_runner.hpp"

#include <memory>

#include "dispatcher/backend.hpp"
#include "dispatcher/backends/jit/nvrtc_compiler.hpp"
#include "dispatcher/cuda/device_buffer.hpp"
#include "dispatcher/tuning/kernel_timing.hpp"

namespace convjit::analysis {

namespace {

// Output units checked at each end of a probe's output: enough to catch a
// kernel that skipped work, few enough that the host's check of the l2
// and ldmatrix folds takes well under a second.
constexpr long long kCheckedUnits = 4096;

// One probe's module as a Kernel, so that it is timed exactly as the
// JIT's kernels are (x: the probe's input, out: its output).
class ProbeKernel final : public Kernel {
 public:
  ProbeKernel(std::shared_ptr<DeviceContext> context, KernelEntry entry)
      : driver_(CudaDriver::instance()), context_(std::move(context)), entry_(std::move(entry)) {}
  ~ProbeKernel() override {
    const ContextScope scope = context_->enter();
    if (module_ != nullptr) (void)driver_.api().module_unload(module_);
  }
  ProbeKernel(const ProbeKernel&) = delete;
  ProbeKernel& operator=(const ProbeKernel&) = delete;

  [[nodiscard]] Status load(const std::vector<char>& cubin) {
    const ContextScope scope = context_->enter();
    if (!scope.status().is_ok()) return scope.status();
    if (Status s = driver_.check(driver_.api().module_load_data(&module_, cubin.data()),
                                 "cuModuleLoadData");
        !s.is_ok())
      return s;
    return driver_.check(
        driver_.api().module_get_function(&function_, module_, entry_.name.c_str()),
        "cuModuleGetFunction");
  }

  [[nodiscard]] Status execute(const ExecArgs& args) const override {
    const ContextScope scope = context_->enter();
    if (!scope.status().is_ok()) return scope.status();
    const void* in = args.x;
    void* out = args.out;
    void* none = nullptr;
    float alpha = 1, beta = 0;
    void* params[] = {&in, &none, &out, &alpha, &beta, &none};
    return driver_.check(
        driver_.api().launch_kernel(function_, entry_.blocks(), 1, 1, entry_.threads_per_block, 1,
                                    1, 0, static_cast<CUstream>(args.stream), params, nullptr),
        "cuLaunchKernel");
  }

 private:
  const CudaDriver& driver_;
  std::shared_ptr<DeviceContext> context_;
  KernelEntry entry_;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
};

Result<ProbeReading> run_probe(const std::shared_ptr<DeviceContext>& context,
                               const std::string& arch, const ProbePlan& plan) {
  const KernelSource source = plan.source();
  auto compiled = compile_kernel(source, arch);
  if (!compiled.is_ok()) return compiled.status();
  ProbeKernel kernel(context, source.entries.front());
  if (Status s = kernel.load(compiled.value().cubin); !s.is_ok()) return s;

  const std::vector<std::uint32_t> input = probe_input(plan);
  auto in = DeviceBuffer::allocate(context, plan.input_bytes());
  if (!in.is_ok()) return in.status();
  auto out = DeviceBuffer::allocate(context, plan.output_bytes());
  if (!out.is_ok()) return out.status();
  if (Status s = in.value()->upload(input.data()); !s.is_ok()) return s;
  std::vector<std::uint32_t> output(plan.output_bytes() / sizeof(std::uint32_t), 0);
  if (Status s = out.value()->upload(output.data()); !s.is_ok()) return s;

  ExecArgs args;
  args.x = in.value()->get();
  args.out = out.value()->get();
  auto ms = median_kernel_ms(kernel, args, context.get());
  if (!ms.is_ok()) return ms.status();
  if (Status s = out.value()->download(output.data()); !s.is_ok()) return s;

  return ProbeReading{plan, ms.value() / 1e3,
                      check_probe_output(plan, input, output, kCheckedUnits)};
}

}  // namespace

Result<DeviceCalibration> run_calibration_probes(int ordinal) {
  auto context = DeviceContext::open(ordinal);
  if (!context.is_ok()) return context.status();
  const CudaDriver& driver = CudaDriver::instance();
  DeviceCalibration calibration;
  calibration.device = driver.name_of(ordinal);
  calibration.arch = driver.arch_of(ordinal);
  CUdevice device = 0;
  if (Status s = driver.check(driver.api().device_get(&device, ordinal), "cuDeviceGet"); !s.is_ok())
    return s;
  if (Status s = driver.check(driver.api().device_get_attribute(
                                  &calibration.sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device),
                              "cuDeviceGetAttribute");
      !s.is_ok())
    return s;
  for (const ProbePlan& plan : calibration_probes(calibration.sms)) {
    auto reading = run_probe(context.value(), calibration.arch, plan);
    if (!reading.is_ok()) return reading.status();
    calibration.readings.push_back(std::move(reading).value());
  }
  return calibration;
}

}  // namespace convjit::analysis
