// The records of which filters a kernel's own workspaces hold a copy of
// (dispatcher/packed_filter_copies.hpp): a call that promises w unchanged
// skips the copy only where the workspace's last copy was of that w at that
// version.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <string>
#include <thread>
#include <vector>

#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/jit/tap_fold.hpp"
#include "dispatcher/packed_filter_copies.hpp"
#include "support/jit_problem_set.hpp"
#include "support/threads_store_scope.hpp"

namespace convjit {
namespace {

// Addresses stand in for device memory: the records only compare pointers.
const void* at(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }

const void* const kWorkspace = at(0x10000);
const void* const kW = at(0x20000);

TEST(PackedFilterCopies, AWorkspaceHoldsTheCopyOfTheWAndVersionItWasLastCopiedFrom) {
  PackedFilterCopies copies;
  EXPECT_FALSE(copies.holds(kWorkspace, true, kW, 1)) << "nothing copied yet";
  copies.record(kWorkspace, true, kW, 1);
  EXPECT_TRUE(copies.holds(kWorkspace, true, kW, 1));
  EXPECT_FALSE(copies.holds(kWorkspace, true, kW, 2)) << "a new version: w has changed";
  EXPECT_FALSE(copies.holds(kWorkspace, true, at(0x30000), 1)) << "other filters";
  EXPECT_FALSE(copies.holds(at(0x40000), true, kW, 1)) << "another stream's workspace";
  copies.record(kWorkspace, true, kW, 2);
  EXPECT_TRUE(copies.holds(kWorkspace, true, kW, 2));
  EXPECT_FALSE(copies.holds(kWorkspace, true, kW, 1)) << "the copy is of version 2 now";
}

TEST(PackedFilterCopies, VersionZeroNeverReusesAndForgetsTheCopy) {
  PackedFilterCopies copies;
  copies.record(kWorkspace, true, kW, 0);
  EXPECT_FALSE(copies.holds(kWorkspace, true, kW, 0));
  copies.record(kWorkspace, true, kW, 5);
  copies.record(kWorkspace, true, kW, 0);  // a call without the promise copied again
  EXPECT_FALSE(copies.holds(kWorkspace, true, kW, 5))
      << "a copy made without the promise is not the one version 5 named";
}

TEST(PackedFilterCopies, ACallersWorkspaceIsNeverTrusted) {
  PackedFilterCopies copies;
  copies.record(kWorkspace, false, kW, 3);
  EXPECT_FALSE(copies.holds(kWorkspace, false, kW, 3));
  EXPECT_FALSE(copies.holds(kWorkspace, true, kW, 3)) << "a caller's copy was not recorded";
  copies.record(kWorkspace, true, kW, 3);
  EXPECT_FALSE(copies.holds(kWorkspace, false, kW, 3))
      << "the caller's memory at that address may hold anything";
  EXPECT_FALSE(copies.holds(nullptr, true, kW, 3)) << "no workspace, no copy";
}

// One workspace a stream, as many as StreamWorkspaces keeps, recorded from
// a thread each at once: each keeps its own record.
TEST(PackedFilterCopies, EachStreamsWorkspaceKeepsItsOwnRecord) {
  constexpr std::size_t kStreams = StreamWorkspaces::kMaxStreams;
  PackedFilterCopies copies;
  std::vector<std::thread> threads;
  for (std::size_t s = 0; s < kStreams; ++s)
    threads.emplace_back([&copies, s] {
      for (std::uint64_t version = 1; version <= 50; ++version)
        copies.record(at(0x10000 + 0x100 * s), true, at(0x90000 + s), version + s);
    });
  for (std::thread& t : threads) t.join();
  for (std::size_t s = 0; s < kStreams; ++s) {
    EXPECT_TRUE(copies.holds(at(0x10000 + 0x100 * s), true, at(0x90000 + s), 50 + s)) << s;
    EXPECT_FALSE(copies.holds(at(0x10000 + 0x100 * s), true, at(0x90000 + s), 49 + s)) << s;
  }
}

long long constant(const KernelSource& source, std::string_view name) {
  for (const ProblemConstant& c : source.constants)
    if (c.name == name) return c.value;
  return 0;
}

// Which of a variant's passes a promised call skips: the first alone, and
// only where it copies w alone; and what it leaves in the workspace's first
// bytes is not overwritten by another pass (a slice's or Stream-K's partial
// sums, Stream-K's counters) nor read before it is written.  How many
// variants copy.
int check_the_copy_is_first_and_kept(const OpDescriptor& d) {
  int copying = 0;
  for (const std::string& id : jit_variants(d, variant_context("sm_90"))) {
    auto source = kernel_source(d, id);
    if (!source.is_ok()) continue;
    SCOPED_TRACE(id);
    const KernelSource& s = source.value();
    const auto copies = std::count_if(s.entries.begin(), s.entries.end(),
                                      [](const KernelEntry& e) { return e.copies_filters; });
    EXPECT_LE(copies, 1);
    if (copies == 0) continue;
    ++copying;
    EXPECT_TRUE(s.entries.front().copies_filters) << "the copy is the first pass";
    EXPECT_EQ(s.entries.front().name, "convjit_kernel_prepare");
    std::size_t copy_bytes = element_size(d.dtype);
    for (int i = 0; i < d.spatial_dims + 2; ++i)
      copy_bytes *= static_cast<std::size_t>(d.w_dims[static_cast<std::size_t>(i)]);
    EXPECT_GE(s.workspace_bytes, copy_bytes);
    if (s.zeroed_bytes > 0) {
      EXPECT_GE(s.zeroed_offset, copy_bytes);
    }
    if (constant(s, "SPLIT") > 1 || constant(s, "STREAM_K") > 0) {
      EXPECT_GE(static_cast<std::size_t>(constant(s, "PARTIALS")) * sizeof(float), copy_bytes);
    }
    EXPECT_EQ(constant(s, "FOLD"), 0) << "a folded conv's first pass reads x too";
  }
  return copying;
}

// K C R S filters under channels-last activations: the GEMM tiles and the
// Hopper conv copy them, fwd and bwddata, strided or not, sliced or by
// Stream-K; K R S C filters are read in place by a fwd, and a stem that
// folds its taps builds x' and w' in one first pass that reads x, which
// no promise about w can skip.
TEST(PackedFilterCopies, OnlyAFirstPassThatCopiesWAloneIsSkippedAndItsCopyIsKept) {
  // The first splits its reduction in the two-consumer tiles; the second's
  // 20 ping-pong tiles of 27 K steps run by Stream-K where it is on.
  test::ConvCase sliced, streamed;
  sliced.batch = 2, sliced.channels = 256, sliced.filters = 96, sliced.input = {14, 14};
  streamed.batch = 2, streamed.channels = 136, streamed.filters = 40, streamed.input = {40, 32};
  for (test::ConvCase c : {sliced, streamed})
    for (const char* stream_k : {"0", "1"}) {
      const test::SettingScope scope("CONVJIT_WGMMA_STREAM_K", stream_k);
      c.kernel = {3, 3}, c.pad_begin = {1, 1}, c.layout = test::TestLayout::nhwc;
      for (const std::int64_t stride : {1, 2}) {
        c.stride = {stride, stride};
        for (Direction direction : {Direction::fwd, Direction::bwddata}) {
          SCOPED_TRACE(
              fmt::format("{} {} stream-K {}", c.describe(), direction_name(direction), stream_k));
          c.filter_layout = test::TestLayout::nchw;
          EXPECT_GT(
              check_the_copy_is_first_and_kept(test::descriptor(c, DataType::bf16, direction)), 0);
          c.filter_layout = test::TestLayout::nhwc;
          const int in_place =
              check_the_copy_is_first_and_kept(test::descriptor(c, DataType::bf16, direction));
          if (direction == Direction::fwd) {
            EXPECT_EQ(in_place, 0);
          }
        }
      }
    }
  test::ConvCase stem;
  stem.batch = 2, stem.channels = 3, stem.filters = 64, stem.input = {32, 32}, stem.kernel = {7, 7};
  stem.stride = {2, 2}, stem.pad_begin = {3, 3};
  stem.layout = test::TestLayout::nhwc, stem.filter_layout = test::TestLayout::nchw;
  const OpDescriptor folded = test::descriptor(stem, DataType::bf16, Direction::fwd);
  ASSERT_TRUE(folds_taps(folded));
  auto source = kernel_source(folded, jit_variants(folded, variant_context("sm_90")).front());
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  EXPECT_EQ(constant(source.value(), "FOLD"), 1);
  for (const KernelEntry& e : source.value().entries) EXPECT_FALSE(e.copies_filters) << e.name;
}

}  // namespace
}  // namespace convjit
