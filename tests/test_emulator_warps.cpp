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

#include "dispatcher/backends/emulator/warp_operations.hpp"
#include "support/test_templates.hpp"

namespace convjit::emulator {
namespace {

using ::testing::HasSubstr;

using test::kWarpBlock;

using test::iota_from;
using test::run_emulated;
using test::MmaKind;
using test::MmaProblem;
using test::TemplateRun;

using test::expect_reported;

// ---- shuffles and votes --------------------------------------------------------------

TEST(EmulatorWarps, ShufflesAndVotesMatchCudasPermutationsAndReductions) {
  constexpr long long kThreads = 2 * kWarpBlock;
  const std::vector<float> in = test::shuffle_input(kThreads);
  const TemplateRun run = run_emulated("warp_shuffles.cuh", 0, in, 8 * kThreads, kThreads);
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
      run_emulated("warp_shuffles.cuh", 1, iota_from(kWarpBlock, 1.0f), 8 * kWarpBlock, kWarpBlock);
  expect_reported(run, "warp divergence: __shfl_sync");
  expect_reported(run, "lane 16 waits at __shfl_up_sync");
  expect_reported(run, "every lane the mask names must reach the same warp collective");
}

TEST(EmulatorWarps, AMaskWithoutTheCallingLaneIsReported) {
  const TemplateRun run =
      run_emulated("warp_shuffles.cuh", 2, iota_from(kWarpBlock, 1.0f), 8 * kWarpBlock, kWarpBlock);
  expect_reported(run, "calls __shfl_xor_sync");
  expect_reported(run, "which leaves out its own lane 1");
}

// ---- vector memory ------------------------------------------------------------------

TEST(EmulatorWarps, VectorLoadsAndStoresMoveWholeElements) {
  constexpr long long kThreads = 2 * kWarpBlock;
  const std::vector<float> in = iota_from(4 * kThreads, 1.0f);
  const TemplateRun run = run_emulated("vector_memory.cuh", 0, in, 4 * kThreads, kThreads);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (long long i = 0; i < kThreads; ++i) {
    const long long neighbour = i - i % kWarpBlock + (i % kWarpBlock + 1) % kWarpBlock;
    for (int k = 0; k < 4; ++k)
      ASSERT_EQ(run.output[static_cast<std::size_t>(4 * i + k)],
                in[static_cast<std::size_t>(4 * neighbour + k)])
          << "thread " << i;
  }
}

TEST(EmulatorWarps, AMisalignedVectorAccessIsReported) {
  const std::vector<float> in = iota_from(4 * kWarpBlock + 4, 1.0f);
  expect_reported(run_emulated("vector_memory.cuh", 1, in, 4 * kWarpBlock, kWarpBlock),
                  "reads 16 bytes at byte 4 of x, not 16-byte aligned: a misaligned vector "
                  "access, which faults on the GPU");
  expect_reported(run_emulated("vector_memory.cuh", 2, in, 4 * kWarpBlock, kWarpBlock),
                  "writes 16 bytes at shared tile[1] (4-byte elements): not 16-byte aligned");
}

// ---- cp.async ------------------------------------------------------------------------

TEST(EmulatorWarps, AsyncCopiesLandAtTheirWaitWithZeroFill) {
  constexpr long long kThreads = 2 * kWarpBlock;
  const std::vector<float> in = iota_from(8 * kThreads, 1.0f);
  const TemplateRun run = run_emulated("async_copy.cuh", 0, in, 8 * kThreads, kThreads);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (long long i = 0; i < kThreads; ++i) {
    const long long neighbour = i - i % kWarpBlock + (i % kWarpBlock + 1) % kWarpBlock;
    for (int k = 0; k < 8; ++k) {
      const float expected =
          k == 5 || k == 7 ? 0.0f : in[static_cast<std::size_t>(8 * neighbour + k)];
      ASSERT_EQ(run.output[static_cast<std::size_t>(8 * i + k)], expected)
          << "thread " << i << " element " << k;
    }
  }
}

TEST(EmulatorWarps, AMissingWaitGroupIsReported) {
  const std::vector<float> in = iota_from(8 * kWarpBlock, 1.0f);
  expect_reported(run_emulated("async_copy.cuh", 1, in, 8 * kWarpBlock, kWarpBlock),
                  "reads shared tile[8] while thread 1's cp.async to it is in flight: a "
                  "cp.async.wait_group");
  expect_reported(run_emulated("async_copy.cuh", 2, in, 8 * kWarpBlock, kWarpBlock),
                  "writes shared tile[0] while thread 0's cp.async to it is in flight");
  expect_reported(run_emulated("async_copy.cuh", 3, in, 8 * kWarpBlock, kWarpBlock),
                  "returns with 4 cp.async copies never waited for");
}

// ---- ldmatrix -------------------------------------------------------------------------

TEST(EmulatorWarps, LdmatrixFollowsThePtxFragmentLayout) {
  const std::vector<float> in = test::ldmatrix_input(kWarpBlock);
  const TemplateRun run = run_emulated("warp_ldmatrix.cuh", 0, in, 28 * kWarpBlock, kWarpBlock);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  for (long long i = 0; i < kWarpBlock; ++i) {
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
  const std::vector<float> in(8 * kWarpBlock, 1.0f);
  expect_reported(
      run_emulated("warp_ldmatrix.cuh", 1, in, 28 * kWarpBlock, kWarpBlock),
      "reads shared tile[0] after a write by thread 31 in the same barrier interval (1): "
      "a race; a __syncthreads() is missing");
  expect_reported(run_emulated("warp_ldmatrix.cuh", 2, in, 28 * kWarpBlock, kWarpBlock),
                  "ldmatrix row address shared tile[1] is not 16-byte aligned");
}

// ---- mma.sync ---------------------------------------------------------------------------

using test::pack_registers;
using test::random_mma_problem;
using test::rna_tf32;

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

class EmulatorMma : public ::testing::TestWithParam<MmaKind> {};

TEST_P(EmulatorMma, MatchesTheMatrixProductThroughThePtxLayout) {
  constexpr long long kWarps = kWarpBlock / 32;
  const MmaKind kind = GetParam();
  const MmaProblem p = random_mma_problem(kind, kWarps, 5 + static_cast<unsigned>(kind));
  const TemplateRun run = run_emulated("warp_mma.cuh", static_cast<long long>(kind),
                                       pack_registers(p, kind, kWarps), 4 * kWarpBlock, kWarpBlock);
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
  constexpr long long kWarps = kWarpBlock / 32;
  const MmaProblem p = random_mma_problem(MmaKind::f16, kWarps, 3);
  const TemplateRun run = run_emulated("warp_mma.cuh", 3, pack_registers(p, MmaKind::f16, kWarps),
                                       4 * kWarpBlock, kWarpBlock);
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
