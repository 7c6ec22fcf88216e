// How long a kernel would take on a GPU, predicted without one: the
// largest of the times its work needs on each of the GPU's limits, from
// counts the analysis has exactly (mma.sync instructions, shared-memory
// wavefronts and global sectors from the emulator, the SASS mix,
// occupancy) and throughputs from gpu_throughput.hpp.  Per kernel:
//   tensor  the mma.sync instructions at the pipe's reachable rate;
//   fma     its FFMA-class instructions (estimated as issue is) at the
//           FMA pipe's rate;
//   shared  the wavefronts, one per clock per SM;
//   issue   the warp instructions, 4 per clock per SM (the dynamic count
//           is the emulator's count of the main loop's anchor, its MMAs or
//           else its memory instructions, times the loop's instructions per
//           anchor in the SASS);
//   l2      every sector the kernel requests, at L2 bandwidth (L1 hits are
//           not modelled: an upper bound for kernels that reuse through L1);
//   dram    the distinct sectors it touches, plus, when they exceed L2, the
//           share of its other sector requests that L2 cannot hold.
// The SM-local limits (tensor, fma, shared, issue) are stretched by wave
// quantisation: a grid of 1.1 waves takes 2.  The DRAM time is stretched
// when the bytes the SM keeps in flight cannot cover the DRAM latency at
// its share of the bandwidth (Little's law).  Issue runs at full rate
// only with enough warps per scheduler.  Each round of resident blocks
// then adds what nothing hides: its pipeline's fill and drain and its
// tiles' epilogues (the "latency"), fitted to a lent GPU's times.
// Throughputs that are ranges give ranges.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analysis/gpu_throughput.hpp"
#include "analysis/kernel_analysis.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/result.hpp"

namespace convjit::analysis {

struct Limit {
  std::string_view name;  // "tensor", "fma", "shared", "issue", "l2", "dram"
  Range seconds;
};

struct KernelPrediction {
  std::vector<Limit> limits;
  Range seconds;              // the largest limit, at each end of the ranges
  std::string_view limiter;   // the largest at the middle of the ranges, or "latency"
  double waves = 0;           // blocks over the blocks the GPU runs at once
  double latency_stretch = 1;  // > 1: too few bytes in flight for the DRAM latency
  double rounds = 0;           // rounds of resident blocks: the waves, rounded up
  Range exposed_latency;       // the rounds' fill, drain and epilogues, in `seconds`
  // The copy of w that a call which promises w unchanged skips
  // (convjit_exec_t::w_version): predicted, not counted in the variant's time.
  bool skipped = false;
  [[nodiscard]] double seconds_of(std::string_view limit) const {
    for (const Limit& l : limits)
      if (l.name == limit) return l.seconds.mid();
    return 0;
  }
};

// NOT_AVAILABLE when the entry lacks its memory counters or its occupancy
// on `gpu`.  `tile`: the GEMM tile of the variant, or null (the bytes in
// flight are then one 16-byte load per thread).  `tile_outputs`: the
// outputs whose epilogue a round charges (epilogue_outputs), 0 for none.
[[nodiscard]] Result<KernelPrediction> predict_kernel(const EntryAnalysis& entry,
                                                      const GpuSpec& gpu, const GemmTile* tile,
                                                      long long tile_outputs = 0);

// The outputs whose epilogue each round of a variant's main entry
// charges: what one storing group holds, since a round's groups store
// side by side (the blocks resident together, a block's consumer
// warpgroups).  A GEMM tile's block stores its whole tile; a Hopper
// conv's consumer its 128 pixels by up to 128 filters (a two-consumer
// tile's half, a ping-pong consumer's own tile); 0 for a variant without
// a tile.  Charged for every resident block and a block's whole tile,
// the epilogues made the H200's times of the tiles of a block a tile
// 0.62-0.73x the prediction; charged so, 0.94-1.06x
// (bench/results/2026-12-05-model-refit).
[[nodiscard]] long long epilogue_outputs(std::string_view variant);

// A variant's kernels predicted on one GPU, one after another.
struct VariantPrediction {
  const GpuSpec* gpu = nullptr;
  std::vector<KernelPrediction> kernels;  // in launch order; empty when `missing` says why
  Range seconds;
  double roofline_seconds = 0;  // op_roofline.hpp's bound on the GPU's datasheet peaks
  std::string missing;
  // The roofline time over the predicted: 1 is the op's ideal.
  [[nodiscard]] Range roofline_fraction() const {
    return {roofline_seconds / seconds.high, roofline_seconds / seconds.low};
  }
};

// One per GPU of the analysed architecture.  `w_unchanged`: the call
// promises w unchanged since an earlier one, so the first pass that copies
// w (KernelEntry::copies_filters) is skipped and not counted.
[[nodiscard]] std::vector<VariantPrediction> predict_variant(const OpDescriptor& desc,
                                                             const VariantAnalysis& analysis,
                                                             bool w_unchanged = false);

}  // namespace convjit::analysis
