// The microbenchmarks `convjit calibrate` runs on a GPU
// (kernel_templates/calibration/throughput_probes.cuh): what one launch of
// each probe does, how much work that is, and which figure of the
// bottleneck model (gpu_throughput.hpp) its measured rate stands against.
// Pure descriptions: probe_runner.hpp runs them, and the emulator tests run
// them small.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "analysis/gpu_spec.hpp"
#include "analysis/gpu_throughput.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/result.hpp"

namespace convjit::analysis {

// The template's P::MODE values.
enum class ProbeKind { stream = 0, l2_read = 1, mma = 2, ldmatrix = 3, chase = 4 };

inline constexpr std::string_view kProbeTemplate = "calibration/throughput_probes.cuh";
inline constexpr long long kProbeChunkBytes = 16;     // every probe moves 16-byte chunks
inline constexpr long long kChaseSpacingChunks = 16;  // a chase's links sit 256 bytes apart

// One probe's launch, in the template's terms.
struct ProbeSize {
  long long threads = 0;  // a multiple of kJitThreadsPerBlock: the grid, exactly
  long long n = 0;        // stream: chunks copied; chase: chunks in the buffer
  long long span = 1;     // l2 read: the window, in chunks (a power of two)
  long long iters = 0;    // per thread (l2 read), per warp (mma, ldmatrix), links (chase)
};

struct ProbePlan {
  ProbeKind kind;
  ProbeSize size;
  [[nodiscard]] std::string_view name() const;  // "hbm copy"
  [[nodiscard]] KernelSource source() const;     // the prelude's constants and the entry
  [[nodiscard]] std::size_t input_bytes() const;
  [[nodiscard]] std::size_t output_bytes() const;
  // Per launch: bytes (stream: read plus written; l2 read: read), FLOPs
  // (mma), shared-memory wavefronts (ldmatrix) or dependent loads (chase).
  [[nodiscard]] double work() const;
};

// The probes, sized for a GPU of `sms` multiprocessors so that each launch
// lasts about a millisecond or more (the chase, tens).
[[nodiscard]] std::vector<ProbePlan> calibration_probes(int sms);

// A probe's input, as 32-bit words (input_bytes() of them): distinct
// words to copy and read; bf16 ones for the mma; for the chase, one cycle
// through the buffer's links in a random order, each link's first word
// the chunk index of the next.  Its output starts zeroed (the chase starts
// from the chunk its output names).
[[nodiscard]] std::vector<std::uint32_t> probe_input(const ProbePlan& plan);

// Whether a launch computed what the template promises, on threads
// [0, checked) and the last `checked` (every thread when there are fewer),
// so that a rate is never reported for a kernel that skipped its work.
// The status names the probe, the thread and both values.
[[nodiscard]] Status check_probe_output(const ProbePlan& plan, std::span<const std::uint32_t> input,
                                        std::span<const std::uint32_t> output,
                                        long long checked);

// What the model holds for a probe's rate on `gpu` (`throughput` its row):
// bytes/s, FLOP/s or wavefronts/s for the whole device, or seconds per
// link for the chase.
[[nodiscard]] Range modelled_probe_rate(ProbeKind kind, const GpuSpec& gpu,
                                        const GpuThroughput& throughput);

// "TB/s", "TFLOP/s", "G wavefronts/s" or "ns", and the factor from the
// rate's base unit to it.
struct ProbeUnit {
  std::string_view name;
  double scale;
};
[[nodiscard]] ProbeUnit probe_unit(ProbeKind kind);

}  // namespace convjit::analysis
