// An op's work and the least time a device could do it in (DESIGN.md
// section 9): a convolution is bound by its math or by moving x (the part
// its windows reach), w and y once, whichever takes longer; pooling and
// the bias gradient by memory.
// `convjit bench` reports each time as a share of this bound, and
// `convjit analyze` each prediction.
#pragma once

#include "analysis/device_peaks.hpp"
#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit::analysis {

struct OpWork {
  double flop = 0;   // 2 per multiply-add; 0 for the memory-bound ops
  // Every operand read or written once (a training batchnorm reads
  // twice; a strided conv's x only where its windows reach).
  double bytes = 0;
};
[[nodiscard]] OpWork op_work(const OpDescriptor& desc);

struct Roofline {
  double ms = 0;               // the least time
  bool compute_bound = false;  // the math, not memory, sets it
};
// `compute_tflops`: the peak of the math the op may run on
// (compute_peak_tflops).
[[nodiscard]] Roofline roofline(const OpWork& work, const DevicePeaks& peaks,
                                double compute_tflops);

}  // namespace convjit::analysis
