// The datasheet limits an op is held to (DESIGN.md section 9): dense peak
// throughput per math kind and memory bandwidth, for the GPUs
// gpu_throughput.cpp models (their sources are there).
#pragma once

#include <optional>
#include <string_view>

#include "dispatcher/descriptor/dtype.hpp"

namespace convjit::analysis {

struct DevicePeaks {
  double fp32_tflops = 0;       // SIMT FMA
  double tf32_tflops = 0;       // f32 on tensor cores, dense
  double half_tflops = 0;       // f16/bf16 tensor cores, dense
  double bandwidth_gbs = 0;     // HBM
};

// By the driver's device name ("NVIDIA H100 80GB HBM3"); nullopt for GPUs
// without known figures (a PCIe H100, an A100 other than SXM4 80GB).
[[nodiscard]] std::optional<DevicePeaks> device_peaks(std::string_view gpu_name);

// The compute peak an op of `dtype` is held to: f16 and bf16 run on
// tensor cores, f32 on FMA kernels unless `allow_tf32` (the
// CONVJIT_ALLOW_TF32 setting) lets it run on TF32 tensor cores.
[[nodiscard]] double compute_peak_tflops(const DevicePeaks& peaks, DataType dtype,
                                         bool allow_tf32);

}  // namespace convjit::analysis
