// The emulator's warps: shuffles and votes against the permutations and
// reductions CUDA documents, vector memory and cp.async against plain
// copies, ldmatrix and mma.sync against the PTX ISA's fragment layouts
// (written out here again, independently of the emulator's), and each
// planted bug (tests/emulator_templates) reported with a clear message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "dispatcher/backends/emulator/emulated_template.hpp"
#include "dispatcher/backends/emulator/kernel_emulator.hpp"
#include "dispatcher/backends/emulator/warp_operations.hpp"
#include "dispatcher/descriptor/half_precision.hpp"

namespace convjit::emulator {

std::span<const EmulatedTemplate* const> test_emulated_templates();

namespace {

using ::testing::HasSubstr;

constexpr long long kBlock = kJitThreadsPerBlock;
constexpr float kUnwritten = -12345.0f;

struct TemplateRun {
  std::vector<float> output;
  Status status;
};

// Runs test template `name` (f32) on `threads` threads in P::MODE `mode`.
TemplateRun run_template(const char* name, long long mode, const std::vector<float>& input,
                         std::size_t output_size, long long threads) {
  TemplateRun run;
  run.output.assign(output_size, kUnwritten);
  std::vector<float> in = input;
  KernelSource source;
  source.template_name = name;
  source.constants = {{"BLOCK", kBlock}, {"N", threads}, {"MODE", mode}};
  source.entries = {{"convjit_kernel", threads}};
  const EmulatedTemplate* kernels =
      find_emulated_template(test_emulated_templates(), name, DataType::f32);
  EXPECT_NE(kernels, nullptr) << name;
  if (kernels == nullptr) return run;
  const BufferSpec x{"x", BufferRole::input, sizeof(float), static_cast<std::int64_t>(in.size()),
                     {}};
  const BufferSpec y{"y", BufferRole::output, sizeof(float),
                     static_cast<std::int64_t>(output_size), {}};
  EmulatedLaunch launch;
  launch.kernels = kernels;
  launch.source = &source;
  launch.in0 = {&x, in.data()};
  launch.out = {&y, run.output.data()};
  launch.out_destination = run.output.data();
  run.status = emulate(launch);
  return run;
}

void expect_reported(const TemplateRun& run, const std::string& what) {
  EXPECT_EQ(run.status.code(), CONVJIT_STATUS_EXECUTION_FAILED) << run.status.message();
  EXPECT_THAT(run.status.message(), HasSubstr(what));
}

std::vector<float> iota_from(std::size_t n, float first) {
  std::vector<float> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

// ---- shuffles and votes --------------------------------------------------------------

TEST(EmulatorWarps, ShufflesAndVotesMatchCudasPermutationsAndReductions) {
  constexpr long long kThreads = 2 * kBlock;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> value(-1.0f, 1.0f);
  std::vector<float> in(kThreads);
  for (float& v : in) v = value(rng);
  for (int l = 0; l < 32; ++l)
    in[3 * 32 + l] = static_cast<float>(1 + l), in[5 * 32 + l] = static_cast<float>(-1 - l);
  const TemplateRun run = run_template("warp_shuffles.cuh", 0, in, 8 * kThreads, kThreads);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (long long i = 0; i < kThreads; ++i) {
    const long long base = i - i % 32;
    const int lane = static_cast<int>(i % 32);
    const auto at = [&](int l) { return in[static_cast<std::size_t>(base + l)]; };
    unsigned ballot = 0;
    for (int l = 0; l < 32; ++l) ballot |= (at(l) > 0.0f ? 1u : 0u) << l;
    const float expected[8] = {
        at((7 * lane + 3) % 32),
        at(lane >= 3 ? lane - 3 : lane),       // up: lanes below the delta keep theirs
        at(lane + 5 <= 31 ? lane + 5 : lane),  // down: lanes past the end keep theirs
        at(lane ^ 9),
        at(lane ^ 2),                          // within its segment of 8
        at((lane & ~15) + 5),
        std::bit_cast<float>(ballot),
        static_cast<float>(2 * (ballot != 0) + (ballot == 0xffffffffu))};
    for (int k = 0; k < 8; ++k)
      ASSERT_EQ(std::bit_cast<std::uint32_t>(run.output[static_cast<std::size_t>(8 * i + k)]),
                std::bit_cast<std::uint32_t>(expected[k]))
          << "thread " << i << " result " << k;
  }
}

TEST(EmulatorWarps, AShuffleUnderADivergentMaskIsReported) {
  const TemplateRun run =
      run_template("warp_shuffles.cuh", 1, iota_from(kBlock, 1.0f), 8 * kBlock, kBlock);
  expect_reported(run, "warp divergence: __shfl_sync");
  expect_reported(run, "lane 16 waits at __shfl_up_sync");
  expect_reported(run, "every lane the mask names must reach the same warp collective");
}

TEST(EmulatorWarps, AMaskWithoutTheCallingLaneIsReported) {
  const TemplateRun run =
      run_template("warp_shuffles.cuh", 2, iota_from(kBlock, 1.0f), 8 * kBlock, kBlock);
  expect_reported(run, "calls __shfl_xor_sync");
  expect_reported(run, "which leaves out its own lane 1");
}

// ---- vector memory ------------------------------------------------------------------

TEST(EmulatorWarps, VectorLoadsAndStoresMoveWholeElements) {
  constexpr long long kThreads = 2 * kBlock;
  const std::vector<float> in = iota_from(4 * kThreads, 1.0f);
  const TemplateRun run = run_template("vector_memory.cuh", 0, in, 4 * kThreads, kThreads);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (long long i = 0; i < kThreads; ++i) {
    const long long neighbour = i - i % kBlock + (i % kBlock + 1) % kBlock;
    for (int k = 0; k < 4; ++k)
      ASSERT_EQ(run.output[static_cast<std::size_t>(4 * i + k)],
                in[static_cast<std::size_t>(4 * neighbour + k)])
          << "thread " << i;
  }
}

TEST(EmulatorWarps, AMisalignedVectorAccessIsReported) {
  const std::vector<float> in = iota_from(4 * kBlock + 4, 1.0f);
  expect_reported(run_template("vector_memory.cuh", 1, in, 4 * kBlock, kBlock),
                  "reads 16 bytes at byte 4 of x, not 16-byte aligned: a misaligned vector "
                  "access, which faults on the GPU");
  expect_reported(run_template("vector_memory.cuh", 2, in, 4 * kBlock, kBlock),
                  "writes 16 bytes at shared tile[1] (4-byte elements): not 16-byte aligned");
}

// ---- cp.async ------------------------------------------------------------------------

TEST(EmulatorWarps, AsyncCopiesLandAtTheirWaitWithZeroFill) {
  constexpr long long kThreads = 2 * kBlock;
  const std::vector<float> in = iota_from(8 * kThreads, 1.0f);
  const TemplateRun run = run_template("async_copy.cuh", 0, in, 8 * kThreads, kThreads);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (long long i = 0; i < kThreads; ++i) {
    const long long neighbour = i - i % kBlock + (i % kBlock + 1) % kBlock;
    for (int k = 0; k < 8; ++k) {
      const float expected =
          k == 5 || k == 7 ? 0.0f : in[static_cast<std::size_t>(8 * neighbour + k)];
      ASSERT_EQ(run.output[static_cast<std::size_t>(8 * i + k)], expected)
          << "thread " << i << " element " << k;
    }
  }
}

TEST(EmulatorWarps, AMissingWaitGroupIsReported) {
  const std::vector<float> in = iota_from(8 * kBlock, 1.0f);
  expect_reported(run_template("async_copy.cuh", 1, in, 8 * kBlock, kBlock),
                  "reads shared tile[8] while thread 1's cp.async to it is in flight: a "
                  "cp.async.wait_group");
  expect_reported(run_template("async_copy.cuh", 2, in, 8 * kBlock, kBlock),
                  "writes shared tile[0] while thread 0's cp.async to it is in flight");
  expect_reported(run_template("async_copy.cuh", 3, in, 8 * kBlock, kBlock),
                  "returns with 4 cp.async copies never waited for");
}

// ---- ldmatrix -------------------------------------------------------------------------

TEST(EmulatorWarps, LdmatrixFollowsThePtxFragmentLayout) {
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> bits(0, 65535);
  std::vector<float> in(8 * kBlock);
  for (float& v : in) v = static_cast<float>(bits(rng));
  const TemplateRun run = run_template("warp_ldmatrix.cuh", 0, in, 28 * kBlock, kBlock);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (long long i = 0; i < kBlock; ++i) {
    const long long base = i - i % 32;
    const long long lane = i % 32, group = lane / 4, pair = lane % 4 * 2;
    // Matrix m, row r, column c as the warp stored it.
    const auto m = [&](long long matrix, long long r, long long c) {
      return in[static_cast<std::size_t>(8 * (base + 8 * matrix + r) + c)];
    };
    std::vector<float> expected;
    for (bool trans : {false, true})
      for (long long count : {1, 2, 4})
        for (long long matrix = 0; matrix < count; ++matrix)
          for (long long half = 0; half < 2; ++half)
            expected.push_back(trans ? m(matrix, pair + half, group) : m(matrix, group, pair + half));
    for (std::size_t k = 0; k < expected.size(); ++k)
      ASSERT_EQ(run.output[static_cast<std::size_t>(28 * i) + k], expected[k])
          << "thread " << i << " value " << k;
  }
}

TEST(EmulatorWarps, LdmatrixWithoutABarrierAfterTheStoresIsARace) {
  const std::vector<float> in(8 * kBlock, 1.0f);
  expect_reported(run_template("warp_ldmatrix.cuh", 1, in, 28 * kBlock, kBlock),
                  "reads shared tile[0] after a write by thread 31 in the same barrier interval (1): "
                  "a race; a __syncthreads() is missing");
  expect_reported(run_template("warp_ldmatrix.cuh", 2, in, 28 * kBlock, kBlock),
                  "ldmatrix row address shared tile[1] is not 16-byte aligned");
}

// ---- mma.sync ---------------------------------------------------------------------------

enum class MmaKind { f16, bf16, tf32, f16_swapped };

// cvt.rna.tf32.f32, written independently of the emulator: keep 11
// significant bits, ties away from zero.
float rna_tf32(float x) {
  int exponent = 0;
  const double m = std::frexp(static_cast<double>(x), &exponent);
  return static_cast<float>(std::ldexp(std::round(std::ldexp(m, 11)), exponent - 11));
}

struct MmaProblem {
  int k = 16;
  std::vector<float> a, b, c;  // 16 x k, k x 8, 16 x 8 per warp, row-major
};

// Registers per lane (a[4], b[2], c[4]) as the PTX ISA lays the fragments
// out, as f32 bits.
std::vector<float> pack_registers(const MmaProblem& p, MmaKind kind, long long warps) {
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

// The first element of D that differs from A * B + C by more than f32
// rounding of the sum (1e-6 of the sum of magnitudes), or "".
std::string first_mismatch(const MmaProblem& p, bool tf32, const std::vector<float>& d,
                           long long warps) {
  for (long long w = 0; w < warps; ++w)
    for (unsigned lane = 0; lane < 32; ++lane)
      for (unsigned i = 0; i < 4; ++i) {
        const unsigned row = lane / 4 + 8 * (i / 2), col = 2 * (lane % 4) + i % 2;
        double sum = p.c[static_cast<std::size_t>(w * 128 + row * 8 + col)], magnitude = std::abs(sum);
        for (int kk = 0; kk < p.k; ++kk) {
          double x = p.a[static_cast<std::size_t>(w * 16 * p.k + row * p.k + kk)];
          double y = p.b[static_cast<std::size_t>(w * p.k * 8 + kk * 8 + col)];
          if (tf32) x = rna_tf32(static_cast<float>(x)), y = rna_tf32(static_cast<float>(y));
          sum += x * y, magnitude += std::abs(x * y);
        }
        const float got = d[static_cast<std::size_t>((w * 32 + lane) * 4 + i)];
        if (!(std::abs(got - sum) <= 1e-6 * (1.0 + magnitude)))
          return "warp " + std::to_string(w) + " D[" + std::to_string(row) + "][" +
                 std::to_string(col) + "] = " + std::to_string(got) + ", A * B + C = " +
                 std::to_string(sum);
      }
  return "";
}

MmaProblem random_mma_problem(MmaKind kind, long long warps, unsigned seed) {
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

class EmulatorMma : public ::testing::TestWithParam<MmaKind> {};

TEST_P(EmulatorMma, MatchesTheMatrixProductThroughThePtxLayout) {
  constexpr long long kWarps = kBlock / 32;
  const MmaKind kind = GetParam();
  const MmaProblem p = random_mma_problem(kind, kWarps, 5 + static_cast<unsigned>(kind));
  const TemplateRun run = run_template("warp_mma.cuh", static_cast<long long>(kind),
                                       pack_registers(p, kind, kWarps), 4 * kBlock, kBlock);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  EXPECT_EQ(first_mismatch(p, kind == MmaKind::tf32, run.output, kWarps), "");
}

std::string mma_kind_name(const ::testing::TestParamInfo<MmaKind>& kind) {
  switch (kind.param) {
    case MmaKind::bf16:
      return "bf16";
    case MmaKind::tf32:
      return "tf32";
    default:
      return "f16";
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, EmulatorMma,
                         ::testing::Values(MmaKind::f16, MmaKind::bf16, MmaKind::tf32),
                         mma_kind_name);

TEST(EmulatorWarps, AWrongFragmentIndexGivesAWrongProductThatTheComparisonNames) {
  constexpr long long kWarps = kBlock / 32;
  const MmaProblem p = random_mma_problem(MmaKind::f16, kWarps, 3);
  const TemplateRun run = run_template("warp_mma.cuh", 3, pack_registers(p, MmaKind::f16, kWarps),
                                       4 * kBlock, kBlock);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  EXPECT_THAT(first_mismatch(p, false, run.output, kWarps), HasSubstr("warp 0 D["));
}

TEST(EmulatorWarps, Tf32RoundingIsToNearestWithTiesAwayFromZero) {
  const float tie = std::bit_cast<float>(0x3f801000u);  // 1 + half a tf32 ulp
  EXPECT_EQ(round_to_tf32(tie), 0x3f802000u);
  EXPECT_EQ(round_to_tf32(-tie), 0xbf802000u);
  EXPECT_EQ(round_to_tf32(std::bit_cast<float>(0x3f800fffu)), 0x3f800000u);
  EXPECT_EQ(std::bit_cast<float>(round_to_tf32(1.1f)), rna_tf32(1.1f));
}

}  // namespace

}  // namespace convjit::emulator
