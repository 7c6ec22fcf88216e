#include "analysis/throughput_probes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <numeric>
#include <random>

namespace convjit::analysis {

namespace {

constexpr long long kWarp = 32;
// One m16n8k16 is 16 x 8 x 16 multiply-adds; the probe runs four a step.
constexpr double kMmaFlops = 2.0 * 16 * 8 * 16;
constexpr int kMmaChains = 4;
constexpr int kLdmatrixWavefronts = 4;  // an x4's four 8x8 matrices of 16-byte rows

constexpr std::uint32_t kBf16OnePair = 0x3F803F80u;  // two bf16 1.0s in one register

// Words a thread of the probe writes, from the input, as the template
// computes them.
std::uint32_t l2_fold_word(const ProbePlan& plan, std::span<const std::uint32_t> in, long long t,
                           int word) {
  std::uint32_t fold = 0;
  for (long long k = 0; k < plan.size.iters; ++k)
    fold ^= in[4 * ((t + k * plan.size.threads) & (plan.size.span - 1)) + word];
  return fold;
}

// Lane l's register i of an ldmatrix.x4 is row l/4 of matrix i, the row
// lane 8i + l/4 addressed: its chunk (k ^ row) % 8, columns 2(l%4) and
// 2(l%4)+1, whose values the template set to row + column.
std::uint32_t ldmatrix_fold(long long iters, unsigned lane) {
  unsigned fold = 0;
  for (long long k = 0; k < iters; ++k)
    for (unsigned i = 0; i < 4; ++i) {
      const unsigned row = 8 * i + lane / 4;
      const unsigned column = 8 * ((static_cast<unsigned>(k) ^ row) % 8) + 2 * (lane % 4);
      fold ^= ((row + column) & 0xffffu) | (((row + column + 1) & 0xffffu) << 16);
    }
  return std::bit_cast<std::uint32_t>(static_cast<float>(fold & 0xffffu));
}

// The chase goes on from where the launch before stopped, so after any
// number of launches it sits a whole number of launches' links from chunk
// 0 along the cycle: looked for over the first kChaseLaunches launches.
constexpr long long kChaseLaunches = 64;

Status check_chase(const ProbePlan& plan, std::span<const std::uint32_t> in, std::uint32_t got) {
  std::uint32_t at = 0;
  for (long long step = 1; step <= kChaseLaunches * plan.size.iters; ++step) {
    at = in[4 * static_cast<std::size_t>(at)];
    if (step % plan.size.iters == 0 && at == got) return Status::ok();
  }
  return Status(CONVJIT_STATUS_INTERNAL_ERROR,
                fmt::format("{} probe: output 0 word 0 is {:#010x}, not where {} links a launch "
                            "from chunk 0 lead in up to {} launches",
                            plan.name(), got, plan.size.iters, kChaseLaunches));
}

// The expected word `word` of output unit `u` (a chunk or a thread's value).
std::uint32_t expected_word(const ProbePlan& plan, std::span<const std::uint32_t> in, long long u,
                            int word) {
  switch (plan.kind) {
    case ProbeKind::stream: return in[4 * u + word];
    case ProbeKind::l2_read: return l2_fold_word(plan, in, u, word);
    case ProbeKind::mma:  // every lane: 4 chains x 4 values of 16 ones, per step
      return std::bit_cast<std::uint32_t>(static_cast<float>(256 * plan.size.iters));
    case ProbeKind::ldmatrix: return ldmatrix_fold(plan.size.iters, static_cast<unsigned>(u % kWarp));
    case ProbeKind::chase: break;  // check_chase
  }
  return 0;
}

}  // namespace

std::vector<std::uint32_t> probe_input(const ProbePlan& plan) {
  std::vector<std::uint32_t> in(plan.input_bytes() / sizeof(std::uint32_t), 0);
  switch (plan.kind) {
    case ProbeKind::stream:
    case ProbeKind::l2_read:
      for (std::size_t i = 0; i < in.size(); ++i)
        in[i] = static_cast<std::uint32_t>(i) * 2654435761u + 1;
      break;
    case ProbeKind::mma: std::fill(in.begin(), in.end(), kBf16OnePair); break;
    case ProbeKind::ldmatrix: break;
    case ProbeKind::chase: {
      // Links 256 bytes apart, so no two share a sector or a line, visited
      // in a random order that no prefetcher follows.
      std::vector<std::uint32_t> slots(static_cast<std::size_t>(plan.size.n / kChaseSpacingChunks));
      std::iota(slots.begin(), slots.end(), 0u);
      std::shuffle(slots.begin() + 1, slots.end(), std::mt19937(2026));
      for (std::size_t i = 0; i < slots.size(); ++i)
        in[4 * kChaseSpacingChunks * slots[i]] =
            static_cast<std::uint32_t>(kChaseSpacingChunks * slots[(i + 1) % slots.size()]);
      break;
    }
  }
  return in;
}

Status check_probe_output(const ProbePlan& plan, std::span<const std::uint32_t> input,
                          std::span<const std::uint32_t> output, long long checked) {
  const bool chunks = plan.kind == ProbeKind::stream || plan.kind == ProbeKind::l2_read;
  const int words = chunks ? 4 : 1;
  const long long units = plan.kind == ProbeKind::chase ? 1
                          : plan.kind == ProbeKind::stream ? plan.size.n
                                                           : plan.size.threads;
  if (input.size() * sizeof(std::uint32_t) < plan.input_bytes() ||
      output.size() < static_cast<std::size_t>(units * words))
    return Status(CONVJIT_STATUS_INVALID_ARGUMENT,
                  fmt::format("{} probe: buffers smaller than the probe's", plan.name()));
  if (plan.kind == ProbeKind::chase) return check_chase(plan, input, output[0]);
  for (long long u = 0; u < units; ++u) {
    if (u == checked && units - checked > u) u = units - checked;
    for (int w = 0; w < words; ++w) {
      const std::uint32_t want = expected_word(plan, input, u, w), got = output[words * u + w];
      if (got != want)
        return Status(CONVJIT_STATUS_INTERNAL_ERROR,
                      fmt::format("{} probe: output {} word {} is {:#010x}, should be {:#010x}: "
                                  "its rate would not be the rate of the work it names",
                                  plan.name(), u, w, got, want));
    }
  }
  return Status::ok();
}

std::string_view ProbePlan::name() const {
  switch (kind) {
    case ProbeKind::stream: return "hbm copy";
    case ProbeKind::l2_read: return "l2 read";
    case ProbeKind::mma: return "mma.sync bf16";
    case ProbeKind::ldmatrix: return "ldmatrix.x4";
    case ProbeKind::chase: return "dram latency";
  }
  return "?";
}

KernelSource ProbePlan::source() const {
  KernelSource s;
  s.variant = "probe";
  s.template_name = std::string(kProbeTemplate);
  s.constants = {{"BLOCK", kJitThreadsPerBlock}, {"MODE", static_cast<long long>(kind)},
                 {"N", size.n}, {"SPAN", size.span}, {"ITERS", size.iters}};
  s.source = kernel_text(s, DataType::f32);
  s.entries = {{"convjit_kernel", size.threads, size.threads / kJitThreadsPerBlock}};
  return s;
}

std::size_t ProbePlan::input_bytes() const {
  switch (kind) {
    case ProbeKind::stream:
    case ProbeKind::chase: return static_cast<std::size_t>(size.n * kProbeChunkBytes);
    case ProbeKind::l2_read: return static_cast<std::size_t>(size.span * kProbeChunkBytes);
    case ProbeKind::mma: return kWarp * 8 * sizeof(float);  // every lane's fragments
    case ProbeKind::ldmatrix: return kProbeChunkBytes;     // unread
  }
  return 0;
}

std::size_t ProbePlan::output_bytes() const {
  switch (kind) {
    case ProbeKind::stream: return static_cast<std::size_t>(size.n * kProbeChunkBytes);
    case ProbeKind::l2_read: return static_cast<std::size_t>(size.threads * kProbeChunkBytes);
    case ProbeKind::mma:
    case ProbeKind::ldmatrix: return static_cast<std::size_t>(size.threads) * sizeof(float);
    case ProbeKind::chase: return sizeof(float);  // where the chase stopped
  }
  return 0;
}

double ProbePlan::work() const {
  const double warps = static_cast<double>(size.threads / kWarp);
  const auto iters = static_cast<double>(size.iters);
  switch (kind) {
    case ProbeKind::stream: return 2.0 * static_cast<double>(size.n) * kProbeChunkBytes;
    case ProbeKind::l2_read:
      return static_cast<double>(size.threads) * iters * kProbeChunkBytes;
    case ProbeKind::mma: return warps * iters * kMmaChains * kMmaFlops;
    case ProbeKind::ldmatrix: return warps * iters * kLdmatrixWavefronts;
    case ProbeKind::chase: return iters;
  }
  return 0;
}

std::vector<ProbePlan> calibration_probes(int sms) {
  const long long block = kJitThreadsPerBlock;
  // Eight blocks of 256 threads fill an SM's 2048 threads for the memory
  // probes; four (32 warps) keep the tensor and shared pipes busy while
  // leaving the ldmatrix probe's 32 KiB a block room.
  const long long full = sms * 8 * block, half = sms * 4 * block;
  return {
      {ProbeKind::stream, {full, 64LL << 20, 1, 0}},            // 1 GiB each way
      {ProbeKind::l2_read, {full, 0, 1LL << 20, 1024}},         // a 16 MiB window
      {ProbeKind::mma, {half, 0, 1, 8192}},
      {ProbeKind::ldmatrix, {half, 0, 1, 16384}},
      {ProbeKind::chase, {block, 64LL << 20, 1, 20000}},        // links across 1 GiB
  };
}

Range modelled_probe_rate(ProbeKind kind, const GpuSpec& gpu, const GpuThroughput& t) {
  const double per_clock_device = t.clock_hz * gpu.sms;
  switch (kind) {
    case ProbeKind::stream: return t.dram_bytes_per_s;
    case ProbeKind::l2_read: return t.l2_bytes_per_s;
    case ProbeKind::mma:
      return t.mma_sync_fraction * (t.tensor_flops_per_clock_sm * per_clock_device);
    case ProbeKind::ldmatrix: {
      const double rate = t.shared_wavefronts_per_clock_sm * per_clock_device;
      return {rate, rate};
    }
    case ProbeKind::chase: return t.dram_latency_s;
  }
  return {};
}

ProbeUnit probe_unit(ProbeKind kind) {
  switch (kind) {
    case ProbeKind::stream:
    case ProbeKind::l2_read: return {"TB/s", 1e-12};
    case ProbeKind::mma: return {"TFLOP/s", 1e-12};
    case ProbeKind::ldmatrix: return {"G wavefronts/s", 1e-9};
    case ProbeKind::chase: return {"ns", 1e9};
  }
  return {"", 1};
}

}  // namespace convjit::analysis
