#include "analysis/device_peaks.hpp"

#include "analysis/gpu_throughput.hpp"

namespace convjit::analysis {

std::optional<DevicePeaks> device_peaks(std::string_view name) {
  const GpuSpec* gpu = gpu_spec_of_device(name);
  if (gpu == nullptr) return std::nullopt;
  return gpu_throughput(*gpu)->peaks;
}

double compute_peak_tflops(const DevicePeaks& peaks, DataType dtype, bool allow_tf32) {
  if (dtype != DataType::f32) return peaks.half_tflops;
  return allow_tf32 ? peaks.tf32_tflops : peaks.fp32_tflops;
}

}  // namespace convjit::analysis
