// Runs a descriptor's kernels through the host emulator exactly as the JIT
// launches them on a GPU: the same entries, in order, with the same grid
// and block sizes (kernel_source.hpp), the same Problem constants and the
// same workspace size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "convjit/status.hpp"
#include "dispatcher/backends/emulator/emulated_buffers.hpp"
#include "dispatcher/backends/emulator/emulated_template.hpp"
#include "dispatcher/backends/emulator/memory_counters.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/result.hpp"

namespace convjit::emulator {

struct EmulatedOperand {
  const BufferSpec* spec = nullptr;
  const void* data = nullptr;  // the caller's tensor; null passes a null pointer
  void* copy_back = nullptr;   // an output's destination, written only when the launch is clean
};

// A batchnorm's per-channel operands, in NormOperands' order.
struct EmulatedNormOperands {
  EmulatedOperand scale, shift, running_mean, running_var, mean, invstd, scale_grad, shift_grad;
  double momentum = 0.1;
};

struct EmulatedLaunch {
  const EmulatedTemplate* kernels = nullptr;
  const KernelSource* source = nullptr;
  EmulatedOperand in0, in1;
  EmulatedOperand bias, residual;  // a conv fwd's epilogue operands; null where unused
  EmulatedNormOperands norm;        // a batchnorm's; null where unused
  // data: the caller's output, read when beta != 0; no spec where the op
  // writes none (a batchnorm backward asked for parameter gradients only).
  EmulatedOperand out;
  void* out_destination = nullptr;  // written only when the launch is clean
  float alpha = 1.0f, beta = 0.0f;
};

// OK, or EXECUTION_FAILED listing the violations (the output is then left
// untouched).  Launches run one at a time: the Problem constants are
// process-wide.
[[nodiscard]] Status emulate(const EmulatedLaunch& launch);

// The memory counters of each of the launch's kernels, in entry order,
// counted on at most `sampled` blocks of each grid (the first, the last
// and evenly spaced ones between; clusters, where the kernel launches
// clusters) and scaled to the grid.  Only those
// blocks run, so the output is left untouched and a later kernel reads
// workspace that skipped blocks never wrote: the launch's violations are
// not reported (emulate() is the judge of those).  Addresses do not
// depend on the data in the kernels this counts.
[[nodiscard]] Result<std::vector<KernelMemoryCounters>> count_memory(const EmulatedLaunch& launch,
                                                                     unsigned sampled);

// The blocks count_memory runs of a grid of `blocks`.
[[nodiscard]] std::vector<unsigned> sampled_blocks(unsigned blocks, unsigned sampled);

// The factor that scales the counts of the blocks `ran` of `entry`'s grid
// to the whole grid's: the grid's work over theirs.  Every block of a plain
// grid does the same work (blocks / ran), as every block of a Stream-K grid
// does within a unit.  A persistent grid's blocks take its tiles in turn
// (tile t on block t mod blocks), so its first blocks, which are always
// sampled, may hold a tile more than the average: scaled by the blocks,
// their counts would be the busiest block's for every block, which the
// bottleneck model's stretch to the busiest block would then count again.
[[nodiscard]] double grid_scale(const KernelEntry& entry, std::span<const unsigned> ran);

}  // namespace convjit::emulator
