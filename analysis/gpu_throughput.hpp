// What a GPU can do per second, for the bottleneck model
// (bottleneck_model.hpp): one row per modelled GPU, every figure with its
// source in gpu_throughput.cpp.  A figure no one has measured for us is a
// range, and so is every prediction made from it; the first lent GPU
// calibrates them (tools/gpu-check).
#pragma once

#include <string_view>

#include "analysis/device_peaks.hpp"
#include "analysis/gpu_spec.hpp"

namespace convjit::analysis {

// [low, high]; a figure known exactly has low == high.
struct Range {
  double low = 0, high = 0;
  [[nodiscard]] constexpr Range operator*(double k) const { return {low * k, high * k}; }
  [[nodiscard]] constexpr double mid() const { return (low + high) / 2; }
};

struct GpuThroughput {
  std::string_view gpu;                  // GpuSpec::name
  double clock_hz = 0;                   // SM clock the peaks are quoted at
  double tensor_flops_per_clock_sm = 0;  // dense f16/bf16 mma; TF32 does half the FLOPs at the
                                         // same instruction rate
  Range mma_sync_fraction;               // of that peak, reachable with mma.sync
  Range wgmma_fraction;                  // and with wgmma (sm_90); 0 where there is none
  double fma_flops_per_clock_sm = 0;     // f32 FMA pipe, 2 FLOPs an FMA
  double shared_wavefronts_per_clock_sm = 1;       // ldmatrix's and cp.async's, as measured
  double shared_word_wavefronts_per_clock_sm = 1;  // LDS, STS, ATOMS: 32 banks of 4 bytes
  double issue_per_clock_sm = 4;              // warp instructions, one per scheduler
  Range dram_bytes_per_s;                     // achievable HBM bandwidth
  DevicePeaks peaks;                          // the datasheet's, for the roofline
  Range l2_bytes_per_s;
  double l2_bytes = 0;
  Range dram_latency_s;                       // a load that misses L2, unloaded
  // Fitted to a lent GPU's times of our kernels (gpu_throughput.cpp), for
  // what the throughput limits leave out:
  Range issue_warps_per_scheduler;  // resident warps a scheduler needs to issue every clock
  // Per round of resident blocks, what no other work on the SM hides: the
  // pipeline's fill and drain, by how a kernel feeds its math.
  Range round_latency_plain_s;   // no tensor cores (vector kernels, SIMT tiles)
  Range round_latency_mma_s;     // mma.sync tiles fed by cp.async
  Range round_latency_wgmma_s;   // wgmma fed by TMA
  // A GEMM tile's epilogue per output element of each resident block.
  Range epilogue_s_per_output;
  // A global sector the threads' stores touch, where a warp's stores
  // scatter (a sector or more a lane): the SM sends each to the L2 alone.
  Range store_sector_s;
  // The same where the tile goes to y by TMA (a bulk store from shared
  // memory): not yet timed on a GPU, a range from its copy's write alone
  // to the threads' store's whole constant.
  Range tma_store_epilogue_s_per_output;
};

// The throughput row of a GPU gpu_specs() lists; null for one without.
[[nodiscard]] const GpuThroughput* gpu_throughput(const GpuSpec& gpu);

}  // namespace convjit::analysis
