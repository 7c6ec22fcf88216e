// The `tuned` policy's judge: times every candidate kernel of a descriptor
// (each variant of each backend: every usable cuDNN algorithm, say) on
// random operands and checks the fastest against the host reference.
//
// - Timing: median_kernel_ms (kernel_timing.hpp): one warm-up call, then
//   the median of a few; CUDA events on a GPU, the steady clock on the host.
// - Checking: from the fastest down, the first candidate whose output is
//   within the dtype's tolerance (tolerance.hpp) of the reference wins.  To
//   keep the host reference cheap on large batches, the inputs are zero
//   past batch entry 0 and the reference runs the batch-1 slice (its output
//   is the batch-0 part of the full op's, or all of dw and db).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/backend.hpp"

namespace convjit {

struct TuningCandidate {
  std::string_view backend;
  std::string variant;  // KernelVariant::id, "" for a backend's only kernel
  std::unique_ptr<Kernel> kernel;
  double ms = 0;       // median, filled by choose_by_measurement
  std::string result;  // "0.120 ms", or why it was not usable

  // "jit", or "cudnn[algo1-fma]" for one of several variants.
  [[nodiscard]] std::string label() const;
};

struct TuningChoice {
  std::size_t winner = 0;  // index into the candidates
  std::string summary;     // "jit 0.120 ms, cudnn[algo1-fma] 0.200 ms, ..."
};

// NOT_AVAILABLE with every candidate's problem when none is usable.
[[nodiscard]] Result<TuningChoice> choose_by_measurement(const OpDescriptor& desc,
                                                         const convjit_device_t& device,
                                                         std::vector<TuningCandidate>& candidates);

// The batch-1 descriptor the reference checks against (the same strides).
[[nodiscard]] OpDescriptor batch_slice(const OpDescriptor& desc);

}  // namespace convjit
