// How long a built kernel takes, per call.  The `tuned` policy and
// `convjit bench` share it, so what the policy chooses by is what the bench
// reports.
//
// On a CUDA device, one event pair around a single call would also count
// the host's work inside execute() (entering the context, the workspace
// lookup, cuDNN's host-side dispatch, the launch), since the start event
// is recorded on an idle stream: several to tens of microseconds, enough to
// decide between small kernels by their host paths.  So a sample is a
// batch of back-to-back calls between one event pair, divided by its size:
// the host queues call i+1 while the device runs call i, and only the
// first submission is left in the interval, spread over the batch.  The
// batch is sized from the warm-up call to last about kTargetBatchMs, and
// the result is the median over the batches.  On the host each call is
// timed alone with the steady clock: there the host work is the kernel.
#pragma once

#include <span>
#include <string_view>

#include "dispatcher/backend.hpp"

namespace convjit {

class DeviceContext;

constexpr int kDefaultTimedBatches = 5;
constexpr double kTargetBatchMs = 1.0;
constexpr int kMaxCallsPerBatch = 100;

// What median_kernel_ms reports, in words, for reports that show it.
constexpr std::string_view kDeviceTimingMeasure =
    "device time per call: CUDA events around batches of back-to-back calls, median over batches";
constexpr std::string_view kHostTimingMeasure = "wall time per call on the host, median over calls";

// `device`: the CUDA device's context the kernel runs in, or null for the
// host.  `batches`: samples taken (on the host, calls).
[[nodiscard]] Result<double> median_kernel_ms(const Kernel& kernel, const ExecArgs& args,
                                              const DeviceContext* device,
                                              int batches = kDefaultTimedBatches);

// Calls per batch for a kernel whose warm-up call took `warmup_ms`
// (including a launch and a wait, so an overestimate for small kernels):
// enough for about kTargetBatchMs, at least 1, at most kMaxCallsPerBatch.
[[nodiscard]] int calls_per_batch(double warmup_ms);

// The median of `samples` (the upper one of an even count); reorders them.
[[nodiscard]] double median_of(std::span<double> samples);

}  // namespace convjit
