// How the emulator tests run test templates (tests/emulator_templates), and
// the warp-level wrapper tests' inputs: tests/test_emulator_warps.cpp
// checks the emulator against host computations, and
// tests/test_gpu_warp_wrappers.cpp checks a GPU against the emulator on
// the same inputs.  The test templates are in
// tests/emulator_templates/; every launch has P::BLOCK = 256 threads.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "dispatcher/backends/emulator/emulated_template.hpp"
#include "dispatcher/backends/emulator/kernel_emulator.hpp"
#include "dispatcher/descriptor/half_precision.hpp"

namespace convjit::emulator {
std::span<const EmulatedTemplate* const> test_emulated_templates();
}  // namespace convjit::emulator

namespace convjit::test {

inline constexpr long long kWarpBlock = kJitThreadsPerBlock;
inline constexpr float kUnwritten = -12345.0f;

// The prelude the JIT would generate for a test template.
inline std::string test_template_prelude(long long threads, long long mode) {
  return "#define CONVJIT_DTYPE 0\nstruct Problem {\n  static constexpr long long BLOCK = " +
         std::to_string(kWarpBlock) + ", N = " + std::to_string(threads) +
         ", MODE = " + std::to_string(mode) + ";\n};\n";
}

struct TemplateRun {
  std::vector<float> output;
  Status status;
};

// A run the emulator stopped, its report naming `what`.
inline void expect_reported(const TemplateRun& run, const std::string& what) {
  EXPECT_EQ(run.status.code(), CONVJIT_STATUS_EXECUTION_FAILED) << run.status.message();
  EXPECT_THAT(run.status.message(), ::testing::HasSubstr(what));
}

// What a test-template run may add to the plain launch.
struct EmulatedRunOptions {
  std::vector<std::uint8_t> input_elements;  // x's layout flags; empty: every element
  std::size_t workspace_floats = 0;
  float output_fill = kUnwritten;  // y's contents before the launch
  std::vector<TensorMapArgument> tensor_maps;  // support/tma_cases.hpp
  std::size_t dynamic_shared_bytes = 0;  // convjit_kernel's
  unsigned cluster_blocks = 1;           // convjit_kernel's
  unsigned threads_per_block = static_cast<unsigned>(kWarpBlock);  // convjit_kernel's
};

// A copy of host data starting on a 256-byte boundary, as cudaMalloc's
// do: the emulator keeps a pointer's offset from one (a view), and the
// memory counters' sectors depend on it.
class AlignedFloats {
 public:
  explicit AlignedFloats(const std::vector<float>& from) : storage_(from.size() + 64) {
    void* p = storage_.data();
    std::size_t room = storage_.size() * sizeof(float);
    data_ = static_cast<float*>(std::align(256, from.size() * sizeof(float), p, room));
    std::copy(from.begin(), from.end(), data_);
  }
  [[nodiscard]] float* data() { return data_; }

 private:
  std::vector<float> storage_;
  float* data_;
};

// Test template `name` (f32) launched on `threads` threads in P::MODE
// `mode`, with convjit_kernel_finish after it where the template has one,
// writing into `output`.
class TestLaunch {
 public:
  TestLaunch(const char* name, long long mode, const std::vector<float>& input,
             std::vector<float>& output, long long threads, EmulatedRunOptions options)
      : in_(input), out_(output) {
    using namespace emulator;
    source_.template_name = name;
    source_.constants = {{"BLOCK", kWarpBlock}, {"N", threads}, {"MODE", mode}};
    source_.entries = {{"convjit_kernel", threads}};
    source_.entries[0].dynamic_shared_bytes = options.dynamic_shared_bytes;
    source_.entries[0].cluster_blocks = options.cluster_blocks;
    source_.entries[0].threads_per_block = options.threads_per_block;
    source_.workspace_bytes = options.workspace_floats * sizeof(float);
    kernels_ = find_emulated_template(test_emulated_templates(), name, DataType::f32);
    if (kernels_ == nullptr) {
      status_ = Status(CONVJIT_STATUS_INTERNAL_ERROR, std::string(name) + " is not emulated");
      return;
    }
    if (kernels_->entry("convjit_kernel_finish") != nullptr)
      source_.entries.push_back({"convjit_kernel_finish", threads});
    x_ = {"x", BufferRole::input, sizeof(float), static_cast<std::int64_t>(input.size()),
          std::move(options.input_elements)};
    y_ = {"y", BufferRole::output, sizeof(float), static_cast<std::int64_t>(output.size()), {}};
    launch_.kernels = kernels_;
    launch_.source = &source_;
    launch_.in0 = {&x_, in_.data()};
    launch_.out = {&y_, out_.data()};
    launch_.out_destination = output.data();
    source_.tensor_maps = std::move(options.tensor_maps);
  }
  TestLaunch(const TestLaunch&) = delete;
  TestLaunch& operator=(const TestLaunch&) = delete;

  [[nodiscard]] const Status& status() const { return status_; }  // not OK: no such template
  [[nodiscard]] const emulator::EmulatedLaunch& launch() const { return launch_; }

 private:
  AlignedFloats in_, out_;
  KernelSource source_;
  emulator::BufferSpec x_, y_;
  const emulator::EmulatedTemplate* kernels_ = nullptr;
  emulator::EmulatedLaunch launch_;
  Status status_ = Status::ok();
};

// Runs test template `name` in the emulator (TestLaunch).
inline TemplateRun run_emulated(const char* name, long long mode, const std::vector<float>& input,
                                std::size_t output_size, long long threads,
                                EmulatedRunOptions options = {}) {
  TemplateRun run;
  run.output.assign(output_size, options.output_fill);
  const TestLaunch launch(name, mode, input, run.output, threads, std::move(options));
  run.status = launch.status().is_ok() ? emulator::emulate(launch.launch()) : launch.status();
  return run;
}

// Counts its memory traffic on at most `sampled` blocks (count_memory).
inline Result<std::vector<emulator::KernelMemoryCounters>> count_emulated(
    const char* name, long long mode, const std::vector<float>& input, std::size_t output_size,
    long long threads, unsigned sampled, EmulatedRunOptions options = {}) {
  std::vector<float> output(output_size, kUnwritten);
  const TestLaunch launch(name, mode, input, output, threads, std::move(options));
  if (!launch.status().is_ok()) return launch.status();
  return emulator::count_memory(launch.launch(), sampled);
}

inline std::vector<float> iota_from(std::size_t n, float first) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// warp_shuffles.cuh: random values, with one warp all positive and one all
// negative so that both outcomes of __all_sync occur.
inline std::vector<float> shuffle_input(long long threads) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> in(static_cast<std::size_t>(threads));
  for (float& v : in) v = value(rng);
  for (int l = 0; l < 32; ++l)
    in[3 * 32 + l] = static_cast<float>(1 + l), in[5 * 32 + l] = static_cast<float>(-1 - l);
  return in;
}

// warp_ldmatrix.cuh: random 16-bit values as f32.
inline std::vector<float> ldmatrix_input(long long threads) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> bits(0, 65535);
  std::vector<float> in(static_cast<std::size_t>(8 * threads));
  for (float& v : in) v = static_cast<float>(bits(rng));
  return in;
}

// ---- warp_mma.cuh ---------------------------------------------------------------------

enum class MmaKind { f16, bf16, tf32, f16_swapped };  // = the template's P::MODE

// cvt.rna.tf32.f32, written independently of the emulator: keep 11
// significant bits, ties away from zero.
inline float rna_tf32(float x) {
  int exponent = 0;
  const double m = std::frexp(static_cast<double>(x), &exponent);
  return static_cast<float>(std::ldexp(std::round(std::ldexp(m, 11)), exponent - 11));
}

struct MmaProblem {
  int k = 16;
  std::vector<float> a, b, c;  // 16 x k, k x 8, 16 x 8 per warp, row-major
};

inline MmaProblem random_mma_problem(MmaKind kind, long long warps, unsigned seed) {
  MmaProblem p;
  p.k = kind == MmaKind::tf32 ? 8 : 16;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> small(-64, 64);
  std::uniform_real_distribution<float> real(-2.0f, 2.0f);
  // f16 and bf16 operands are exact in their format (multiples of 1/32).
  const auto operand = [&] {
    return kind == MmaKind::tf32 ? real(rng) : static_cast<float>(small(rng)) / 32.0f;
  };
  p.a.resize(static_cast<std::size_t>(warps * 16 * p.k));
  p.b.resize(static_cast<std::size_t>(warps * p.k * 8));
  p.c.resize(static_cast<std::size_t>(warps * 128));
  for (float& v : p.a) v = operand();
  for (float& v : p.b) v = operand();
  for (float& v : p.c) v = real(rng);
  return p;
}

// Registers per lane (a[4], b[2], c[4]) as the PTX ISA lays the fragments
// out, as f32 bits.
inline std::vector<float> pack_registers(const MmaProblem& p, MmaKind kind, long long warps) {
  std::vector<float> regs;
  const auto half_bits = [&](float v) -> std::uint32_t {
    return kind == MmaKind::bf16 ? float_to_bf16(v).bits : float_to_half(v).bits;
  };
  for (long long w = 0; w < warps; ++w) {
    const float* a = p.a.data() + w * 16 * p.k;
    const float* b = p.b.data() + w * p.k * 8;
    const float* c = p.c.data() + w * 128;
    for (unsigned lane = 0; lane < 32; ++lane) {
      const unsigned g = lane / 4, q = lane % 4;
      std::uint32_t ra[4] = {}, rb[2] = {};
      if (kind == MmaKind::tf32) {
        for (unsigned i = 0; i < 4; ++i)
          ra[i] = std::bit_cast<std::uint32_t>(a[(g + 8 * (i % 2)) * 8 + q + 4 * (i / 2)]);
        for (unsigned i = 0; i < 2; ++i)
          rb[i] = std::bit_cast<std::uint32_t>(b[(q + 4 * i) * 8 + g]);
      } else {
        for (unsigned i = 0; i < 8; ++i) {
          const unsigned row = g + 8 * ((i / 2) % 2), col = 2 * q + i % 2 + 8 * (i / 4);
          ra[i / 2] |= half_bits(a[row * 16 + col]) << (16 * (i % 2));
        }
        for (unsigned i = 0; i < 4; ++i) {
          const unsigned row = 2 * q + i % 2 + 8 * (i / 2);
          rb[i / 2] |= half_bits(b[row * 8 + g]) << (16 * (i % 2));
        }
      }
      for (std::uint32_t r : ra) regs.push_back(std::bit_cast<float>(r));
      for (std::uint32_t r : rb) regs.push_back(std::bit_cast<float>(r));
      for (unsigned i = 0; i < 4; ++i) regs.push_back(c[(g + 8 * (i / 2)) * 8 + 2 * q + i % 2]);
    }
  }
  return regs;
}

// ---- the cases a GPU runs against the emulator ------------------------------------------

struct WarpCase {
  std::string label;
  const char* template_name;
  long long mode;
  std::vector<float> input;
  std::size_t output_size;
  long long threads;
  // 0: bit-exact.  Otherwise the largest |GPU - emulator| allowed,
  // relative to 1 + |emulator|: mma's accumulation order is the ISA's to
  // choose, so f32 sums of 16 terms of magnitude <= 4 may differ in the
  // last bits of each partial sum (16 * 2^-24 * 4, rounded up to 1e-5).
  double tolerance;
};

inline std::vector<WarpCase> warp_cases() {
  constexpr long long kThreads = 2 * kWarpBlock, kWarps = kWarpBlock / 32;
  std::vector<WarpCase> cases = {
      {"shuffles", "warp_shuffles.cuh", 0, shuffle_input(kThreads), 8 * kThreads, kThreads, 0},
      {"vector_memory", "vector_memory.cuh", 0, iota_from(4 * kThreads, 1.0f), 4 * kThreads,
       kThreads, 0},
      {"cp_async", "async_copy.cuh", 0, iota_from(8 * kThreads, 1.0f), 8 * kThreads, kThreads, 0},
      {"ldmatrix", "warp_ldmatrix.cuh", 0, ldmatrix_input(kWarpBlock), 28 * kWarpBlock,
       kWarpBlock, 0}};
  for (MmaKind kind : {MmaKind::f16, MmaKind::bf16, MmaKind::tf32}) {
    const MmaProblem p = random_mma_problem(kind, kWarps, 5 + static_cast<unsigned>(kind));
    const char* labels[] = {"mma_f16", "mma_bf16", "mma_tf32"};
    cases.push_back({labels[static_cast<int>(kind)], "warp_mma.cuh", static_cast<long long>(kind),
                     pack_registers(p, kind, kWarps), 4 * kWarpBlock, kWarpBlock, 1e-5});
  }
  return cases;
}

}  // namespace convjit::test
