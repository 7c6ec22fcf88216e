#include "device_peaks.hpp"

namespace convjit::cli {

std::optional<DevicePeaks> device_peaks(std::string_view name) {
  // H100 SXM and H200 share their compute; H200 has faster HBM3e.  The
  // PCIe H100 is a different part with lower limits, not listed here.
  if (name.find("H200") != std::string_view::npos) return DevicePeaks{67, 495, 989, 4800};
  if (name.find("H100") != std::string_view::npos && name.find("PCIe") == std::string_view::npos)
    return DevicePeaks{67, 495, 989, 3350};
  return std::nullopt;
}

double compute_peak_tflops(const DevicePeaks& peaks, DataType dtype, bool allow_tf32) {
  if (dtype != DataType::f32) return peaks.half_tflops;
  return allow_tf32 ? peaks.tf32_tflops : peaks.fp32_tflops;
}

}  // namespace convjit::cli
