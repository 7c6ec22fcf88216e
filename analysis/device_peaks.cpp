#include "analysis/device_peaks.hpp"

#include "analysis/gpu_throughput.hpp"

namespace convjit::analysis {

std::optional<DevicePeaks> device_peaks(std::string_view name) {
  // H100 SXM and H200 share their compute; H200 has faster HBM3e.  The
  // PCIe H100 and the other A100s are different parts with lower limits.
  const auto has = [&](std::string_view part) { return name.find(part) != std::string_view::npos; };
  std::string_view row;
  if (has("H200")) row = "H200";
  if (has("H100") && !has("PCIe")) row = "H100 SXM";
  if (has("A100-SXM4-80GB")) row = "A100";
  for (const GpuSpec& gpu : gpu_specs())
    if (gpu.name == row) return gpu_throughput(gpu)->peaks;
  return std::nullopt;
}

double compute_peak_tflops(const DevicePeaks& peaks, DataType dtype, bool allow_tf32) {
  if (dtype != DataType::f32) return peaks.half_tflops;
  return allow_tf32 ? peaks.tf32_tflops : peaks.fp32_tflops;
}

}  // namespace convjit::analysis
