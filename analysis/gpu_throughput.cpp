#include "analysis/gpu_throughput.hpp"

namespace convjit::analysis {

namespace {

constexpr double kGHz = 1e9, kTBs = 1e12, kMB = 1e6, kNs = 1e-9, kUs = 1e-6;

// Sources:
// - Tensor and FMA peaks: the H100 and A100 whitepapers ("NVIDIA H100 Tensor
//   Core GPU Architecture", "NVIDIA A100 Tensor Core GPU Architecture").
//   H100 SXM: 989 TFLOP/s dense f16/bf16 = 132 SMs x 4096 FLOP/clock x
//   1.83 GHz; 67 TFLOP/s f32 = 132 x 256 x 1.98 GHz boost (quoted here at
//   1.83 GHz, the clock the tensor figure implies, the model's FMA pipe
//   gives 62 TFLOP/s); TF32 495 TFLOP/s.  A100: 312 TFLOP/s = 108 x 2048 x
//   1.41 GHz; 19.5 TFLOP/s f32 = 108 x 128 x 1.41; TF32 156 TFLOP/s.
//   The datasheet peaks (DevicePeaks) are the roofline's.
// - mma.sync's reach on Hopper: DESIGN.md section 14 (FlashAttention-2, an
//   mma.sync kernel, at about 35% of the H100's peak end to end, FA-3 with
//   wgmma at 75%); modelled as 0.50-0.67 of peak for the GEMM main loop.
//   On Ampere mma.sync is the native path; CUTLASS's Ampere GEMMs reach
//   80-95% of peak.
// - wgmma's reach on Hopper: FA-3 at 75% of the H100's peak end to end
//   (DESIGN.md section 14), large GEMMs from CUTLASS 3 and cuBLAS at 75-80%,
//   the instruction alone close to the peak; modelled as 0.75-0.95.
// - Shared memory: 32 banks of 4 bytes, one wavefront a clock per SM (the
//   CUDA C++ Programming Guide, "Shared Memory" for 8.x and 9.x).
// - Issue: four warp schedulers per SM, one instruction a clock each.
// - HBM: H100 SXM5 3.35 TB/s, H200 4.8 TB/s, A100 80GB SXM 2.039 TB/s
//   (datasheets); achievable about 2.8-3.0, 4.0-4.3 and 1.5-1.8 TB/s (stream
//   copies published for each; DESIGN.md section 9 for the H100).
// - L2: 50 MB on H100 and H200, 40 MB on A100 (whitepapers).  Bandwidth:
//   A100's whitepaper gives 5120 B/clock (7.2 TB/s at 1.41 GHz); for the
//   H100 no figure is published, and microbenchmarks report 5.5-7.5 TB/s.
// - DRAM latency: 450-700 ns unloaded in published pointer-chasing
//   microbenchmarks of A100 and H100.
// - Measured on an H200 (`convjit calibrate`, two runs, 2026-11-26,
//   bench/results/2026-11-26-h200), which replace the published figures
//   above for Hopper where they differ; the H100 SXM has the same SM and L2
//   design, so its row takes the SM and L2 figures too, not the memory's:
//     mma.sync bf16 637.5-648.3 TFLOP/s: 0.645-0.655 of the 989 peak, the
//       top of the range; a main loop that also loads reaches less (0.55);
//     ldmatrix.x4 452.8-457.1 G wavefronts/s of 128 bytes: 1.87 a clock
//       per SM at 1.83 GHz.  LDS and STS were not measured; they take the
//       32 banks' one 128-byte wavefront a clock.  At ldmatrix's rate the
//       H200's times of the pixels kernel (2026-12-04), whose shared
//       traffic is LDS and STS, were 1.99x the prediction; at one a
//       clock 0.82-1.14x on 12 of its 14 convs, all but YOLO11n's stem
//       (2.07x) and its phased bwddata (4.29x)
//       (bench/results/2026-12-05-model-refit);
//     L2 reads over a 16 MiB window from every SM: 9.99-10.07 TB/s, the top
//       of the range; 8 for traffic that also writes;
//     a 16-byte copy of 1 GiB: 3.90-3.92 TB/s read plus written, the low
//       end of the H200's range (PyTorch's copy, 4.3, its top);
//     a dependent load that misses L2 (1 GiB, random): 334-345 ns
//       unloaded; 330-500 ns, as loaded kernels see more.
//   PyTorch reports 60 MB of L2 on the H200 (the device tool's notes).
//
// Fitted to the H200's times of our kernels (bench/results/2026-11-27-h200-
// hopper: every JIT variant of ResNet-50's and YOLO11n's fwd layers, bf16
// channels-last batch 32; the fit and its out-of-sample checks in
// bench/results/2026-11-27-model-fit), for what the limits above leave
// out.  Each range spans the fits to all the ops and to each model alone
// (the epilogue's, which all three put at 0.295 ns, the fit's 5% steps):
//   - the resident warps a scheduler needs to issue every clock;
//   - per round of resident blocks, the exposed fill and drain of a plain
//     kernel, an mma.sync tile and the wgmma conv;
//   - per output element of the resident tiles, their epilogue.  Fitted
//     to the epilogues as they were then: the Hopper conv's took some 180
//     SASS instructions per chunk of 8 outputs a thread (a 64-bit pixel
//     offset a chunk, eight scalar shared loads).  It now computes the
//     offset once a row and reads a chunk in two 16-byte loads, ~45
//     instructions.  The mma.sync tiles' took 91-96 instructions an
//     output (a 64-bit pixel offset an element), now 21-23 (a row's and
//     a column's offsets computed once, gemm/tile_epilogue.cuh).
//     The H200's times of every Hopper configuration (2026-12-04) fit
//     this constant per output of one storing group (a block of a GEMM
//     tile, a Hopper consumer warpgroup: bottleneck_model.hpp's
//     epilogue_outputs), the groups of a round storing side by side:
//     measured / predicted 0.94-1.06 for every configuration of a block a
//     tile (bench/results/2026-12-05-model-refit).
//   - a global sector the threads' stores touch, where they scatter.
//     Fitted to ResNet-50's layer4 3 x 3 bwdfilt (2026-12-04, K C R S dw
//     stored by each tile's threads, 2 bytes a lane and 32 sectors a
//     warp's store: 16,384 sectors a tile): the H200 took 48.5-50.0 us in
//     both Hopper bwdfilt configurations, 144 tiles of which the busiest
//     SM runs 2, where the model without this term had 24.7 and 29.6.
//     The difference and the per-output term those two tiles were already
//     charged put their stores at 0.87-0.92 ns a sector, some 1.6-1.7 SM
//     clocks (bench/results/2026-12-08-kcrs-dw).  Coalesced stores stay
//     under the per-output term: a 128 x 128 tile of 16-bit outputs is
//     1,024 sectors.
// The H100 SXM has the same SM, so it takes them; the A100 was never
// measured: it takes them too, their upper ends stretched by the clock
// ratio (1.83 / 1.41), but the warps a scheduler needs.
constexpr Range kIssueWarps = {5.4, 6.3};
constexpr Range kRoundPlain = {1.08 * kUs, 1.26 * kUs};
constexpr Range kRoundMma = {0, 2.88 * kUs};
constexpr Range kRoundWgmma = {0, 0.14 * kUs};
constexpr Range kEpilogue = {0.28 * kNs, 0.31 * kNs};
constexpr Range kStoreSector = {0.87 * kNs, 0.92 * kNs};
// The TMA store's epilogue (conv/wgmma_conv_tile.cuh's store_by_tma), not
// yet timed.  Its threads stage the tile and one issues the copy; what
// the constant above fitted (the threads' store loop, or the round's tail
// around it) is not known apart.  So the range runs from the copy's write
// of a 16-bit output at the SM's share of the L2's bandwidth (10 TB/s over
// 132 SMs: 0.026 ns; the staging's shared wavefronts take a third of
// that) to the whole of the threads' constant: the TMA store saving
// nothing.  The next GPU run times it against the threads' store.
constexpr double kHopperSms = 132, kOutputBytes = 2;
constexpr Range kTmaStoreEpilogue = {kOutputBytes / (10.0 * kTBs / kHopperSms), kEpilogue.high};
constexpr double kAmpereStretch = 1.83 / 1.41;
constexpr Range stretched(Range r) { return {r.low, r.high * kAmpereStretch}; }

// The H100 SXM and the H200 share the SM and the L2's bandwidth; their
// HBM and L2 sizes differ.
constexpr GpuThroughput hopper(std::string_view gpu, Range dram_bytes_per_s, double hbm_gbs,
                               double l2_bytes) {
  return {.gpu = gpu,
          .clock_hz = 1.83 * kGHz,
          .tensor_flops_per_clock_sm = 4096,
          .mma_sync_fraction = {0.55, 0.65},
          .wgmma_fraction = {0.75, 0.95},
          .fma_flops_per_clock_sm = 256,
          .shared_wavefronts_per_clock_sm = 1.87,
          .shared_word_wavefronts_per_clock_sm = 1,
          .issue_per_clock_sm = 4,
          .dram_bytes_per_s = dram_bytes_per_s,
          .peaks = {67, 495, 989, hbm_gbs},
          .l2_bytes_per_s = {8.0 * kTBs, 10.0 * kTBs},
          .l2_bytes = l2_bytes,
          .dram_latency_s = {330 * kNs, 500 * kNs},
          .issue_warps_per_scheduler = kIssueWarps,
          .round_latency_plain_s = kRoundPlain,
          .round_latency_mma_s = kRoundMma,
          .round_latency_wgmma_s = kRoundWgmma,
          .epilogue_s_per_output = kEpilogue,
          .store_sector_s = kStoreSector,
          .tma_store_epilogue_s_per_output = kTmaStoreEpilogue};
}

constexpr GpuThroughput kRows[] = {
    hopper("H100 SXM", {2.8 * kTBs, 3.0 * kTBs}, 3350, 50 * kMB),
    hopper("H200", {3.9 * kTBs, 4.3 * kTBs}, 4800, 60 * kMB),
    {.gpu = "A100",
     .clock_hz = 1.41 * kGHz,
     .tensor_flops_per_clock_sm = 2048,
     .mma_sync_fraction = {0.80, 0.95},
     .wgmma_fraction = {0, 0},
     .fma_flops_per_clock_sm = 128,
     .shared_wavefronts_per_clock_sm = 1,
     .shared_word_wavefronts_per_clock_sm = 1,
     .issue_per_clock_sm = 4,
     .dram_bytes_per_s = {1.5 * kTBs, 1.8 * kTBs},
     .peaks = {19.5, 156, 312, 2039},
     .l2_bytes_per_s = {4.5 * kTBs, 7.2 * kTBs},
     .l2_bytes = 40 * kMB,
     .dram_latency_s = {450 * kNs, 700 * kNs},
     .issue_warps_per_scheduler = kIssueWarps,
     .round_latency_plain_s = stretched(kRoundPlain),
     .round_latency_mma_s = stretched(kRoundMma),
     .round_latency_wgmma_s = stretched(kRoundWgmma),
     .epilogue_s_per_output = stretched(kEpilogue),
     .store_sector_s = stretched(kStoreSector),
     .tma_store_epilogue_s_per_output = stretched(kEpilogue)},  // no TMA
};

}  // namespace

const GpuThroughput* gpu_throughput(const GpuSpec& gpu) {
  for (const GpuThroughput& r : kRows)
    if (r.gpu == gpu.name) return &r;
  return nullptr;
}

}  // namespace convjit::analysis
