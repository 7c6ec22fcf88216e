// The physical limits `convjit bench` measures against (DESIGN.md section
// 9): dense peak throughput per math kind and memory bandwidth, for the
// GPUs whose figures we know.
#pragma once

#include <optional>
#include <string_view>

#include "dispatcher/descriptor/dtype.hpp"

namespace convjit::cli {

struct DevicePeaks {
  double fp32_tflops = 0;       // SIMT FMA
  double tf32_tflops = 0;       // f32 on tensor cores, dense
  double half_tflops = 0;       // f16/bf16 tensor cores, dense
  double bandwidth_gbs = 0;     // HBM
};

// By the driver's device name; nullopt for GPUs without known figures.
[[nodiscard]] std::optional<DevicePeaks> device_peaks(std::string_view gpu_name);

// The compute peak an op of `dtype` is held to: f16 and bf16 run on
// tensor cores, f32 on FMA kernels unless `allow_tf32` (the
// CONVJIT_ALLOW_TF32 setting) lets it run on TF32 tensor cores.
[[nodiscard]] double compute_peak_tflops(const DevicePeaks& peaks, DataType dtype,
                                         bool allow_tf32);

}  // namespace convjit::cli
