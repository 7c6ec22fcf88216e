// The collective preload (dispatcher/preload/): the work split, and the
// protocol run by a job of ranks as threads (support/thread_job.hpp), with a
// stand-in compiler that counts.  The same protocol under mpirun with NVRTC
// is tests/test_mpi_preload.cpp.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include "cache/jit_cache.hpp"
#include "dispatcher/preload/collective_preload.hpp"
#include "dispatcher/preload/preload_plan.hpp"
#include "support/temp_directory.hpp"
#include "support/thread_job.hpp"

namespace convjit {
namespace {

namespace fs = std::filesystem;

// Names starting "x" are unsupported, "bad" fail to compile.
class CountingCompiler final : public PreloadCompiler {
 public:
  Result<JitCacheKey> key(const std::string& name) override {
    if (name.rfind("x", 0) == 0) return Status::unsupported(name + " is not served by the JIT");
    return make_jit_cache_key(
        {name, "// " + name, std::string(64, 'a'), "0.1.0", "13.0", "sm_90", {"--std=c++17"}});
  }
  Result<CacheEntry> compile(const std::string& name) override {
    {
      std::lock_guard lock(mutex_);
      ++compiles_[name];
    }
    if (name.rfind("bad", 0) == 0) return Status::invalid("NVRTC says no");
    auto k = key(name);
    return CacheEntry{k.value().preimage, "{}", std::vector<char>(100, name[0])};
  }
  std::map<std::string, int> compiles() {
    std::lock_guard lock(mutex_);
    return compiles_;
  }

 private:
  std::mutex mutex_;
  std::map<std::string, int> compiles_;
};

class CollectivePreloadTest : public ::testing::Test {
 protected:
  // Runs a job: rank r asks for names[r]; nodes[r] is its node, whose
  // local tier is <temp>/node<nodes[r]>.
  std::vector<Result<PreloadReport>> run(const std::vector<std::vector<std::string>>& names,
                                         const std::vector<int>& nodes,
                                         const std::vector<Status>& setup = {}) {
    const int ranks = static_cast<int>(names.size());
    test::ThreadJob job(ranks);
    std::vector<Result<PreloadReport>> out(static_cast<std::size_t>(ranks),
                                           Status::invalid("not run"));
    job.run([&](int r) {
      const auto i = static_cast<std::size_t>(r);
      const auto comm = Communicator::wrap(job.communicator(r, nodes[i])).value();
      JitCache cache(JitCacheTiers{local(nodes[i]), {shared()}, r == 0});
      PreloadRequest request;
      request.names = names[i];
      request.jobs = 2;
      if (i < setup.size()) request.setup = setup[i];
      out[i] = collective_preload(comm, cache, compiler_, request);
    });
    return out;
  }
  std::string local(int node) const {
    return (temp_.path() / ("node" + std::to_string(node))).string();
  }
  std::string shared() const { return (temp_.path() / "shared").string(); }
  std::size_t entries_in(const std::string& dir) const { return JitCache({dir}).entries().size(); }

  test::TempDirectory temp_{"convjit-collective"};
  CountingCompiler compiler_;
};

TEST(PreloadPlan, CompilesWhatNobodyHoldsOnceAndSendsWhatSomeoneHolds) {
  const std::vector<std::string> hashes = {"00aa", "01bb", "", "02cc", "03dd"};
  const PreloadHoldings holdings{{0, 2}, {"00-10", "01-00"}, "0--10"};
  const auto plan = assign_preload_work(hashes, holdings);
  ASSERT_EQ(plan.size(), 5u);
  EXPECT_EQ(plan[0].action, PreloadAction::compile);  // nobody holds it
  EXPECT_EQ(plan[0].rank, 0);                         // hash 0x00aa % 2 leaders
  EXPECT_EQ(plan[1].action, PreloadAction::send);     // leader 2's local tier holds it
  EXPECT_EQ(plan[1].rank, 2);
  EXPECT_EQ(plan[2].action, PreloadAction::none);  // unsupported
  EXPECT_EQ(plan[3].action, PreloadAction::send);  // the shared tier holds it: rank 0 sends
  EXPECT_EQ(plan[3].rank, 0);
  EXPECT_EQ(plan[4].action, PreloadAction::compile);
  EXPECT_EQ(plan[4].rank, 2);  // 0x03dd is odd
  // Everyone holds it, or cannot take it: nothing to do.
  EXPECT_EQ(assign_preload_work({"00aa"}, {{0, 2}, {"1", "-"}, "1"})[0].action,
            PreloadAction::none);
}

TEST_F(CollectivePreloadTest, FourRanksOnTwoNodesCompileEachKeyOnceAndFillEveryTier) {
  const std::vector<std::vector<std::string>> names = {
      {"a", "b", "c", "xunsupported"}, {"c", "d", "a"}, {"e", "a", "b"}, {}};
  const auto reports = run(names, {0, 0, 2, 2});
  std::size_t compiled_here = 0;
  for (const auto& r : reports) {
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_EQ(r.value().ranks, 4);
    EXPECT_EQ(r.value().nodes, 2);
    EXPECT_EQ(r.value().requested, 10u);
    EXPECT_EQ(r.value().distinct, 6u);
    EXPECT_EQ(r.value().compiled, 5u);
    EXPECT_EQ(r.value().unsupported, 1u);
    EXPECT_EQ(r.value().failed, 0u);
    EXPECT_EQ(r.value().local_entries, 5u);  // every rank loads every entry from its node
    compiled_here += r.value().compiled_here;
  }
  EXPECT_EQ(compiled_here, 5u);
  EXPECT_EQ(reports[1].value().compiled_here, 0u);  // not a leader
  EXPECT_EQ(reports[3].value().compiled_here, 0u);
  for (const auto& [name, count] : compiler_.compiles()) EXPECT_EQ(count, 1) << name;
  EXPECT_EQ(compiler_.compiles().size(), 5u);
  EXPECT_EQ(entries_in(local(0)), 5u);
  EXPECT_EQ(entries_in(local(2)), 5u);
  EXPECT_EQ(entries_in(shared()), 5u);
  EXPECT_TRUE(JitCache({shared()}).verify().quarantined.empty());

  // Again: nothing to compile, nothing to send.
  const auto again = run(names, {0, 0, 2, 2});
  ASSERT_TRUE(again[0].is_ok());
  EXPECT_EQ(again[0].value().compiled, 0u);
  EXPECT_EQ(again[0].value().cached, 5u);
  for (const auto& [name, count] : compiler_.compiles()) EXPECT_EQ(count, 1) << name;
}

TEST_F(CollectivePreloadTest, ANewNodeIsFilledFromTheSharedTierWithoutCompiling) {
  ASSERT_TRUE(run({{"a", "b"}}, {0})[0].is_ok());
  // Rank 1 is now a node of its own, with an empty local tier.
  const auto reports = run({{"a"}, {"b"}}, {0, 1});
  ASSERT_TRUE(reports[1].is_ok()) << reports[1].status().message();
  EXPECT_EQ(reports[1].value().compiled, 0u);
  EXPECT_EQ(reports[1].value().copied_from_shared, 2u);
  EXPECT_EQ(entries_in(local(1)), 2u);
  for (const auto& [name, count] : compiler_.compiles()) EXPECT_EQ(count, 1) << name;
}

TEST_F(CollectivePreloadTest, AFailedCompileIsCountedOnEveryRankAndTheRestGoOn) {
  const auto reports = run({{"a", "bad1"}, {"b"}}, {0, 1});
  for (const auto& r : reports) {
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_EQ(r.value().compiled, 2u);
    EXPECT_EQ(r.value().failed, 1u);
    ASSERT_EQ(r.value().problems.size(), 1u);
    EXPECT_EQ(r.value().problems[0], "bad1: NVRTC says no");
    EXPECT_EQ(r.value().local_entries, 2u);
  }
}

// A rank that fails before or while the job runs is named by every rank,
// and none waits for it.
TEST_F(CollectivePreloadTest, ARankThatFailsIsReportedByAllAndNoneHangs) {
  const auto before = run({{"a"}, {"b"}, {"c"}}, {0, 1, 2},
                          {Status::ok(), Status::ok(), Status::invalid("record.jsonl unreadable")});
  for (const auto& r : before) {
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(r.status().code(), CONVJIT_STATUS_EXECUTION_FAILED);
    EXPECT_EQ(r.status().message(), "rank 2 failed before the preload: record.jsonl unreadable");
  }
  // Part-way: node 1's local tier cannot be written (its jit/ is a file).
  fs::create_directories(local(1));
  std::ofstream(local(1) + "/jit") << "not a directory";
  const auto during = run({{"a"}, {"b"}}, {0, 1});
  for (const auto& r : during) {
    ASSERT_FALSE(r.is_ok());
    EXPECT_NE(r.status().message().find("rank 1 failed writing its cache tier: cannot create "),
              std::string::npos)
        << r.status().message();
  }
}

TEST_F(CollectivePreloadTest, AJobOfOneIsThePlainPreload) {
  const auto report = run({{"a", "b", "a", "xno"}}, {0});
  ASSERT_TRUE(report[0].is_ok());
  EXPECT_EQ(report[0].value().requested, 4u);
  EXPECT_EQ(report[0].value().distinct, 3u);
  EXPECT_EQ(report[0].value().compiled, 2u);
  EXPECT_EQ(entries_in(shared()), 2u);
  EXPECT_EQ(entries_in(local(0)), 2u);
}

TEST(Communicator, RejectsAnUnusableCommunicatorNamingTheField) {
  convjit_communicator_t comm = single_process_communicator();
  comm.rank = 1;
  EXPECT_EQ(Communicator::wrap(comm).status().message(), "communicator rank 1 is outside 0..0");
  comm = single_process_communicator();
  comm.barrier = nullptr;
  EXPECT_EQ(Communicator::wrap(comm).status().message(),
            "communicator callbacks allgather, broadcast and barrier must all be set");
  comm = single_process_communicator();
  comm.node = 3;
  EXPECT_NE(Communicator::wrap(comm).status().message().find("communicator node 3 is not a rank"),
            std::string::npos);
}

}  // namespace
}  // namespace convjit
