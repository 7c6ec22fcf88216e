// Kernel workspaces: the caller's when given and large enough, else one
// buffer per stream that the kernel owns (dispatcher/kernel_workspace.hpp).
#include "dispatcher/kernel_workspace.hpp"

#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace convjit {
namespace {

// Host memory stands in for device memory: the class only hands pointers out.
struct CountingAllocator {
  std::mutex mutex;
  int allocations = 0;
  int releases = 0;
  StreamWorkspaces make(std::size_t bytes) {
    return StreamWorkspaces(
        bytes,
        [this](std::size_t n) -> Result<void*> {
          std::lock_guard lock(mutex);
          ++allocations;
          return std::malloc(n);
        },
        [this](void* memory) {
          std::lock_guard lock(mutex);
          ++releases;
          std::free(memory);
        });
  }
};

void* fake_stream(std::uintptr_t id) { return reinterpret_cast<void*>(0x1000 + id * 16); }

ExecArgs on_stream(void* stream) {
  ExecArgs args;
  args.stream = stream;
  return args;
}

TEST(KernelWorkspace, CallerWorkspaceIsUsedWhenLargeEnough) {
  std::vector<std::byte> mine(256);
  ExecArgs args;
  args.workspace = mine.data();
  args.workspace_bytes = mine.size();
  auto given = caller_workspace(args, 200, "kernel k");
  ASSERT_TRUE(given.is_ok());
  EXPECT_EQ(given.value(), mine.data());
  auto none = caller_workspace(ExecArgs{}, 200, "kernel k");
  ASSERT_TRUE(none.is_ok());
  EXPECT_EQ(none.value(), nullptr);
}

TEST(KernelWorkspace, TooSmallCallerWorkspaceIsAnErrorNamingBothSizes) {
  CountingAllocator allocator;
  StreamWorkspaces workspaces = allocator.make(4096);
  std::vector<std::byte> small(100);
  ExecArgs args;
  args.workspace = small.data();
  args.workspace_bytes = small.size();
  auto result = workspaces.for_call(args, "the JIT kernel of conv2d_x");
  ASSERT_FALSE(result.is_ok());
  EXPECT_EQ(result.status().code(), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(result.status().message().find("100 bytes is smaller than the 4096 bytes the JIT "
                                           "kernel of conv2d_x needs"),
            std::string::npos)
      << result.status().message();
  EXPECT_EQ(allocator.allocations, 0);  // never silently swapped for its own memory
}

TEST(KernelWorkspace, OneBufferPerStreamReusedOnThatStream) {
  CountingAllocator allocator;
  {
    StreamWorkspaces workspaces = allocator.make(64);
    void* a1 = workspaces.for_call(on_stream(fake_stream(1)), "k").value();
    void* b = workspaces.for_call(on_stream(fake_stream(2)), "k").value();
    void* a2 = workspaces.for_call(on_stream(fake_stream(1)), "k").value();
    void* null_stream = workspaces.for_call(on_stream(nullptr), "k").value();
    EXPECT_EQ(a1, a2);
    EXPECT_NE(a1, b);
    EXPECT_NE(null_stream, a1);
    EXPECT_NE(null_stream, b);
    EXPECT_EQ(allocator.allocations, 3);
    EXPECT_EQ(workspaces.owned_count(), 3u);
  }
  EXPECT_EQ(allocator.releases, 3);
}

TEST(KernelWorkspace, NoWorkspaceNeededAllocatesNothing) {
  CountingAllocator allocator;
  StreamWorkspaces workspaces = allocator.make(0);
  auto result = workspaces.for_call(on_stream(fake_stream(1)), "k");
  ASSERT_TRUE(result.is_ok());
  EXPECT_EQ(result.value(), nullptr);
  EXPECT_EQ(allocator.allocations, 0);
}

TEST(KernelWorkspace, PerThreadDefaultStreamGetsABufferPerThread) {
  CountingAllocator allocator;
  StreamWorkspaces workspaces = allocator.make(64);
  void* per_thread = static_cast<void*>(CU_STREAM_PER_THREAD);
  void* here = workspaces.for_call(on_stream(per_thread), "k").value();
  EXPECT_EQ(workspaces.for_call(on_stream(per_thread), "k").value(), here);
  void* there = nullptr;
  std::thread([&] { there = workspaces.for_call(on_stream(per_thread), "k").value(); }).join();
  EXPECT_NE(here, there);
}

// One thread after another, as a pool that replaces its workers does: a
// later thread's thread_local storage often sits where an exited one's
// did, yet it must not inherit that thread's buffer, which the exited
// thread's last kernel may still be using.
TEST(KernelWorkspace, PerThreadDefaultStreamNeverHandsAnExitedThreadsBufferOn) {
  CountingAllocator allocator;
  StreamWorkspaces workspaces = allocator.make(64);
  void* per_thread = static_cast<void*>(CU_STREAM_PER_THREAD);
  constexpr int kThreads = 6;
  for (int t = 0; t < kThreads; ++t)
    std::thread([&] { ASSERT_TRUE(workspaces.for_call(on_stream(per_thread), "k").is_ok()); }).join();
  EXPECT_EQ(allocator.allocations, kThreads);
  EXPECT_EQ(workspaces.owned_count(), static_cast<std::size_t>(kThreads));
}

TEST(KernelWorkspace, ThePerThreadStreamsThreadBeyondTheLimitIsToldWhyAndWhatToDo) {
  CountingAllocator allocator;
  StreamWorkspaces workspaces = allocator.make(64);
  void* per_thread = static_cast<void*>(CU_STREAM_PER_THREAD);
  for (std::size_t t = 0; t < StreamWorkspaces::kMaxStreams; ++t)
    std::thread([&] { ASSERT_TRUE(workspaces.for_call(on_stream(per_thread), "k").is_ok()); }).join();
  Status extra;
  std::thread([&] { extra = workspaces.for_call(on_stream(per_thread), "this JIT kernel").status(); })
      .join();
  EXPECT_EQ(extra.code(), CONVJIT_STATUS_NOT_AVAILABLE);
  EXPECT_EQ(extra.message(),
            "this JIT kernel keeps a 64-byte workspace for each of at most 32 streams, and this is "
            "stream 33 (CU_STREAM_PER_THREAD counts once for every thread that ever used it); "
            "pass a workspace in convjit_exec_t");
  ExecArgs given = on_stream(per_thread);
  std::vector<unsigned char> own(64);
  given.workspace = own.data();
  given.workspace_bytes = own.size();
  std::thread([&] { EXPECT_EQ(workspaces.for_call(given, "k").value(), own.data()); }).join();
}

TEST(KernelWorkspace, AReservedBufferGoesToTheFirstStreamWithoutAnotherAllocation) {
  CountingAllocator allocator;
  {
    StreamWorkspaces workspaces = allocator.make(64);
    ASSERT_TRUE(workspaces.reserve().is_ok());
    ASSERT_TRUE(workspaces.reserve().is_ok());  // once is enough
    EXPECT_EQ(allocator.allocations, 1);
    EXPECT_EQ(workspaces.owned_count(), 0u);
    void* first = workspaces.for_call(on_stream(fake_stream(1)), "k").value();
    EXPECT_EQ(allocator.allocations, 1);
    EXPECT_NE(workspaces.for_call(on_stream(fake_stream(2)), "k").value(), first);
    EXPECT_EQ(allocator.allocations, 2);
  }
  EXPECT_EQ(allocator.releases, 2);
  {
    StreamWorkspaces unused = allocator.make(64);
    ASSERT_TRUE(unused.reserve().is_ok());
  }
  EXPECT_EQ(allocator.releases, 3);  // a reserve no stream claimed is released too
  StreamWorkspaces none = allocator.make(0);
  EXPECT_TRUE(none.reserve().is_ok());
  EXPECT_EQ(allocator.allocations, 3);
}

TEST(KernelWorkspace, AReserveThatCannotAllocateSaysWhy) {
  StreamWorkspaces workspaces(
      64,
      [](std::size_t) -> Result<void*> {
        return Status(CONVJIT_STATUS_OUT_OF_MEMORY, "cuMemAlloc failed: out of memory");
      },
      [](void*) {});
  const Status reserved = workspaces.reserve();
  EXPECT_EQ(reserved.code(), CONVJIT_STATUS_OUT_OF_MEMORY);
  EXPECT_EQ(reserved.message(), "cuMemAlloc failed: out of memory");
}

TEST(KernelWorkspace, ConcurrentFirstCallsGetDistinctBuffersOncePerStream) {
  CountingAllocator allocator;
  StreamWorkspaces workspaces = allocator.make(64);
  constexpr int kThreads = 8, kStreams = 4, kCalls = 200;
  std::vector<std::vector<void*>> seen(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kCalls; ++i)
        seen[t].push_back(
            workspaces.for_call(on_stream(fake_stream((t + i) % kStreams)), "k").value());
    });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(allocator.allocations, kStreams);
  std::set<void*> distinct;
  for (int t = 0; t < kThreads; ++t)
    for (int i = 0; i < kCalls; ++i) {
      void* expected =
          workspaces.for_call(on_stream(fake_stream((t + i) % kStreams)), "k").value();
      EXPECT_EQ(seen[t][i], expected);
      distinct.insert(seen[t][i]);
    }
  EXPECT_EQ(distinct.size(), static_cast<std::size_t>(kStreams));
}

TEST(KernelWorkspace, TooManyStreamsAskForACallerWorkspace) {
  CountingAllocator allocator;
  StreamWorkspaces workspaces = allocator.make(64);
  for (std::uintptr_t s = 0; s < StreamWorkspaces::kMaxStreams; ++s)
    ASSERT_TRUE(workspaces.for_call(on_stream(fake_stream(s)), "k").is_ok());
  auto extra = workspaces.for_call(on_stream(fake_stream(999)), "kernel k");
  ASSERT_FALSE(extra.is_ok());
  EXPECT_NE(extra.status().message().find("pass a workspace in convjit_exec_t"), std::string::npos)
      << extra.status().message();
  // Known streams keep working.
  EXPECT_TRUE(workspaces.for_call(on_stream(fake_stream(0)), "k").is_ok());
}

// A call that keeps a copy of its filters between calls gets a buffer for
// each w on its stream, so that layers sharing a descriptor keep their
// copies side by side; a call without one shares the stream's.  Past the
// last slot a w's call takes its stream's buffer (and copies every time)
// rather than fail.
TEST(KernelWorkspace, EachFiltersKeptCopyHasABufferOfItsOwnOnItsStream) {
  CountingAllocator allocator;
  StreamWorkspaces workspaces = allocator.make(64);
  int w1 = 0, w2 = 0;
  void* plain = workspaces.for_call(on_stream(fake_stream(1)), "k").value();
  void* first = workspaces.for_call(on_stream(fake_stream(1)), "k", &w1).value();
  void* second = workspaces.for_call(on_stream(fake_stream(1)), "k", &w2).value();
  void* elsewhere = workspaces.for_call(on_stream(fake_stream(2)), "k", &w1).value();
  EXPECT_NE(first, plain);
  EXPECT_NE(second, first);
  EXPECT_NE(second, plain);
  EXPECT_NE(elsewhere, first) << "another stream's calls may overlap this one's";
  EXPECT_EQ(workspaces.for_call(on_stream(fake_stream(1)), "k", &w1).value(), first);
  EXPECT_EQ(workspaces.for_call(on_stream(fake_stream(1)), "k").value(), plain);
  EXPECT_EQ(allocator.allocations, 4);
  std::vector<int> more(StreamWorkspaces::kMaxStreams);
  for (int& w : more) ASSERT_TRUE(workspaces.for_call(on_stream(fake_stream(1)), "k", &w).is_ok());
  EXPECT_EQ(workspaces.owned_count(), StreamWorkspaces::kMaxStreams);
  int late = 0;
  auto shared = workspaces.for_call(on_stream(fake_stream(1)), "k", &late);
  ASSERT_TRUE(shared.is_ok()) << shared.status().message();
  EXPECT_EQ(shared.value(), plain) << "no slot left: the stream's own buffer";
  auto new_stream = workspaces.for_call(on_stream(fake_stream(3)), "k", &late);
  ASSERT_FALSE(new_stream.is_ok()) << "a stream with no buffer at all is told to pass one";
  EXPECT_NE(new_stream.status().message().find("pass a workspace"), std::string::npos);
}

TEST(KernelWorkspace, AllocationFailureIsReportedAndRetried) {
  int attempts = 0;
  StreamWorkspaces workspaces(
      64,
      [&](std::size_t) -> Result<void*> {
        ++attempts;
        return Status(CONVJIT_STATUS_OUT_OF_MEMORY, "cuMemAlloc failed: out of memory");
      },
      [](void*) {});
  auto first = workspaces.for_call(on_stream(fake_stream(1)), "k");
  ASSERT_FALSE(first.is_ok());
  EXPECT_EQ(first.status().code(), CONVJIT_STATUS_OUT_OF_MEMORY);
  EXPECT_FALSE(workspaces.for_call(on_stream(fake_stream(1)), "k").is_ok());
  EXPECT_EQ(attempts, 2);  // a failure is not remembered as a buffer
  EXPECT_EQ(workspaces.owned_count(), 0u);
}

}  // namespace
}  // namespace convjit
