// How long a built kernel takes: one warm-up call, then the median of a
// few.  On a CUDA device the calls are timed with events on the call's
// stream, so launch latency on the host does not count; on the host with
// the steady clock.  The `tuned` policy and `convjit bench` share it, so
// what the policy chooses by is what the bench reports.
#pragma once

#include "backend.hpp"

namespace convjit {

constexpr int kDefaultTimedCalls = 5;

// `on_device`: the kernel runs on a CUDA device whose context is current.
[[nodiscard]] Result<double> median_kernel_ms(const Kernel& kernel, const ExecArgs& args,
                                              bool on_device, int calls = kDefaultTimedCalls);

}  // namespace convjit
