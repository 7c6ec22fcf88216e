// Runs the calibration probes (throughput_probes.hpp) on a CUDA device:
// each compiled with NVRTC for the device's architecture, launched on
// buffers holding probe_input(), timed as `convjit bench` times kernels
// (kernel_timing.hpp), and its output checked before its rate counts.
#pragma once

#include <string>
#include <vector>

#include "analysis/throughput_probes.hpp"
#include "dispatcher/result.hpp"

namespace convjit::analysis {

struct ProbeReading {
  ProbePlan plan;
  double seconds = 0;  // per launch, the median over batches
  Status check;        // check_probe_output's verdict; rate() means nothing unless OK
  // work() / seconds, or seconds per link for the chase.
  [[nodiscard]] double rate() const {
    return plan.kind == ProbeKind::chase ? seconds / plan.work() : plan.work() / seconds;
  }
};

struct DeviceCalibration {
  std::string device;  // the driver's name for it
  std::string arch;    // "sm_90"
  int sms = 0;
  std::vector<ProbeReading> readings;
};

// Device `ordinal`'s readings; NOT_AVAILABLE without a driver or NVRTC.
// A probe that fails to compile or launch ends the run with its status.
[[nodiscard]] Result<DeviceCalibration> run_calibration_probes(int ordinal);

}  // namespace convjit::analysis
