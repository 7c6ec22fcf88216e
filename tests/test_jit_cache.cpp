// The persistent JIT cache: keys, self-validating entries, quarantine of
// damaged ones, concurrent processes, crash safety, eviction and
// read-only directories.  Compiles are simulated: these tests are about
// the cache, not NVRTC.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "cache/cache_tiers.hpp"
#include "cache/file_lock.hpp"
#include "cache/jit_cache.hpp"
#include "support/concurrent_workers.hpp"
#include "support/temp_directory.hpp"

namespace convjit {
namespace {

namespace fs = std::filesystem;

JitKeyFields fields(const std::string& descriptor = "conv2d_demo_fwd") {
  return {descriptor,
          "// source of " + descriptor,
          std::string(64, 'a'),
          "0.1.0",
          "13.0",
          "sm_90",
          {"--gpu-architecture=sm_90", "--std=c++17"}};
}

CacheEntry entry_for(const JitCacheKey& key, std::size_t payload_bytes = 64) {
  return {key.preimage, R"({"entries":[]})", std::vector<char>(payload_bytes, 'c')};
}

class JitCacheTest : public ::testing::Test {
 protected:
  std::vector<fs::path> files_with(const std::string& needle) const {
    std::vector<fs::path> out;
    for (auto& p : fs::recursive_directory_iterator(root_))
      if (p.path().filename().string().find(needle) != std::string::npos) out.push_back(p.path());
    return out;
  }
  test::TempDirectory temp_{"convjit-cache"};
  fs::path root_ = temp_.path();
  std::string dir_ = (root_ / "cache").string();
};

TEST(JitCacheKey, AnyFieldChangesTheKey) {
  const JitCacheKey base = make_jit_cache_key(fields());
  EXPECT_EQ(base.hash.size(), 32u);
  EXPECT_EQ(base.relative_path,
            "jit/v1/nvrtc13.0/sm_90/" + base.hash.substr(0, 2) + "/" + base.hash + ".cjit");
  EXPECT_EQ(make_jit_cache_key(fields()).hash, base.hash);
  std::vector<JitKeyFields> variants(7, fields());
  variants[0].descriptor += "x";
  variants[1].source += " ";
  variants[2].templates_hash[0] = 'b';
  variants[3].convjit_version = "0.1.1";
  variants[4].nvrtc_version = "13.1";
  variants[5].arch = "sm_90a";
  variants[6].options.push_back("--use_fast_math");
  for (const auto& v : variants) {
    const JitCacheKey other = make_jit_cache_key(v);
    EXPECT_NE(other.hash, base.hash);
    EXPECT_NE(other.preimage, base.preimage);
  }
  EXPECT_NE(make_jit_cache_key(variants[4]).relative_path.find("nvrtc13.1/"), std::string::npos);
}

TEST(CacheEntryFormat, RoundTripsAndRejectsDamage) {
  const JitCacheKey key = make_jit_cache_key(fields());
  const std::string bytes = encode_cache_entry(entry_for(key));
  auto decoded = decode_cache_entry(bytes);
  ASSERT_TRUE(decoded.is_ok());
  EXPECT_EQ(decoded.value().preimage, key.preimage);
  EXPECT_EQ(decoded.value().payload.size(), 64u);
  EXPECT_NE(
      decode_cache_entry(bytes.substr(0, bytes.size() - 1)).status().message().find("truncated"),
      std::string::npos);
  EXPECT_NE(decode_cache_entry(bytes.substr(0, 10)).status().message().find("truncated"),
            std::string::npos);
  std::string flipped = bytes;
  flipped[bytes.size() - 5] ^= 0x01;
  EXPECT_EQ(decode_cache_entry(flipped).status().message(), "checksum mismatch");
  std::string magic = bytes;
  magic[0] = 'X';
  EXPECT_NE(decode_cache_entry(magic).status().message().find("bad magic"), std::string::npos);
}

TEST_F(JitCacheTest, CompilesOnceThenHitsAndCreatesPrivateDirectories) {
  JitCache cache({dir_});
  ASSERT_EQ(cache.writable_directory(), dir_);
  struct stat st {};
  ASSERT_EQ(::stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  const JitCacheKey key = make_jit_cache_key(fields());
  int compiles = 0;
  auto compile = [&]() -> Result<CacheEntry> {
    ++compiles;
    return entry_for(key);
  };
  bool compiled = false;
  ASSERT_TRUE(cache.get_or_compile(key, compile, &compiled).is_ok());
  EXPECT_TRUE(compiled);
  ASSERT_TRUE(JitCache({dir_}).get_or_compile(key, compile, &compiled).is_ok());
  EXPECT_FALSE(compiled);
  EXPECT_EQ(compiles, 1);
  EXPECT_TRUE(fs::exists(fs::path(dir_) / key.relative_path));
}

// A damaged entry is quarantined, rebuilt, and the caller only sees success.
void expect_quarantined_and_rebuilt(const std::string& dir, const JitCacheKey& key,
                                    const std::function<void(const fs::path&)>& damage) {
  JitCache cache({dir});
  ASSERT_TRUE(
      cache.get_or_compile(key, [&]() -> Result<CacheEntry> { return entry_for(key); }).is_ok());
  damage(fs::path(dir) / key.relative_path);
  int compiles = 0;
  auto rebuilt = cache.get_or_compile(key, [&]() -> Result<CacheEntry> {
    ++compiles;
    return entry_for(key);
  });
  ASSERT_TRUE(rebuilt.is_ok()) << rebuilt.status().message();
  EXPECT_EQ(compiles, 1);
  EXPECT_EQ(rebuilt.value().preimage, key.preimage);
  EXPECT_FALSE(fs::is_empty(fs::path(dir) / "jit" / "quarantine"));
  EXPECT_TRUE(JitCache({dir}).lookup(key).is_ok());  // the rebuilt entry is valid
}

TEST_F(JitCacheTest, TruncatedEntryIsQuarantinedAndRebuilt) {
  expect_quarantined_and_rebuilt(dir_, make_jit_cache_key(fields()), [](const fs::path& p) {
    fs::resize_file(p, fs::file_size(p) / 2);
  });
}

TEST_F(JitCacheTest, FlippedByteIsQuarantinedAndRebuilt) {
  expect_quarantined_and_rebuilt(dir_, make_jit_cache_key(fields()), [](const fs::path& p) {
    std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);
    f.put('\x7f');
  });
}

TEST_F(JitCacheTest, EntryOfAnotherKeyIsQuarantinedAndRebuilt) {
  const JitCacheKey other = make_jit_cache_key(fields("conv2d_other_fwd"));
  expect_quarantined_and_rebuilt(dir_, make_jit_cache_key(fields()), [&](const fs::path& p) {
    std::ofstream(p, std::ios::binary) << encode_cache_entry(entry_for(other));
  });
}

TEST_F(JitCacheTest, AnEntryTheDriverRefusesIsQuarantinedOnRequest) {
  JitCache cache({dir_});
  const JitCacheKey key = make_jit_cache_key(fields());
  ASSERT_TRUE(
      cache.get_or_compile(key, [&]() -> Result<CacheEntry> { return entry_for(key); }).is_ok());
  cache.quarantine_entry(key, "cuModuleLoadData failed");
  EXPECT_FALSE(cache.lookup(key).is_ok());
  EXPECT_FALSE(fs::is_empty(fs::path(dir_) / "jit" / "quarantine"));
}

// Issue 15, item 4: a cubin is code.  One that another user could have
// written (through the file, its directory or any directory between it and
// the cache directory) is not loaded, and the warning names the path and
// the fix; the same rules as for tuned libraries.
TEST_F(JitCacheTest, AnEntryOtherUsersCouldHaveWrittenIsNotLoaded) {
  const JitCacheKey key = make_jit_cache_key(fields());
  ASSERT_TRUE(JitCache({dir_})
                  .get_or_compile(key, [&]() -> Result<CacheEntry> { return entry_for(key); })
                  .is_ok());
  const fs::path file = fs::path(dir_) / key.relative_path;
  for (const fs::path& loose : {file, file.parent_path(), fs::path(dir_) / "jit" / "v1",
                                fs::path(dir_)}) {
    const auto bit = loose == file ? fs::perms::others_write : fs::perms::group_write;
    fs::permissions(loose, bit, fs::perm_options::add);
    testing::internal::CaptureStderr();
    const bool loaded = JitCache({dir_}).lookup(key).is_ok();
    const std::string warning = testing::internal::GetCapturedStderr();
    EXPECT_FALSE(loaded) << loose;
    EXPECT_NE(warning.find("JIT cache entry not loaded: refusing to load from " +
                           std::string(loose == file ? "file " : "directory ") + loose.string() +
                           ": it is writable by other users"),
              std::string::npos)
        << warning;
    EXPECT_NE(warning.find("run 'chmod go-w " + loose.string() + "'"), std::string::npos)
        << warning;
    fs::permissions(loose, bit, fs::perm_options::remove);
    EXPECT_TRUE(JitCache({dir_}).lookup(key).is_ok()) << loose;
  }
}

TEST_F(JitCacheTest, AnEntryOwnedByAnotherUserIsNotLoaded) {
  if (::geteuid() != 0) GTEST_SKIP() << "giving a file to another user needs root";
  const JitCacheKey key = make_jit_cache_key(fields());
  ASSERT_TRUE(JitCache({dir_})
                  .get_or_compile(key, [&]() -> Result<CacheEntry> { return entry_for(key); })
                  .is_ok());
  const fs::path file = fs::path(dir_) / key.relative_path;
  ASSERT_EQ(::chown(file.c_str(), 4242, 4242), 0);
  testing::internal::CaptureStderr();
  EXPECT_FALSE(JitCache({dir_}).lookup(key).is_ok());
  const std::string warning = testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("refusing to load from file " + file.string() +
                         ": it is owned by uid 4242, not by you"),
            std::string::npos)
      << warning;
}

TEST_F(JitCacheTest, FourProcessesTimesFourThreadsCompileEachKeyOnce) {
  constexpr int kKeys = 12;
  const std::string log = (root_ / "compiles.log").string();
  const auto codes = test::run_in_processes_and_threads(4, 4, [&](int p, int t) {
    JitCache cache({dir_});
    for (int i = 0; i < kKeys; ++i) {
      const JitCacheKey key =
          make_jit_cache_key(fields("op" + std::to_string((i + t + p) % kKeys)));
      auto r = cache.get_or_compile(key, [&]() -> Result<CacheEntry> {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a slow compile widens races
        std::ofstream(log, std::ios::app) << key.hash << "\n";
        return entry_for(key, 4096);
      });
      if (!r.is_ok()) return false;
    }
    return true;
  });
  EXPECT_EQ(codes, std::vector<int>(4, 0));
  std::map<std::string, int> compiles;
  std::ifstream in(log);
  for (std::string line; std::getline(in, line);) ++compiles[line];
  EXPECT_EQ(compiles.size(), static_cast<std::size_t>(kKeys));
  for (const auto& [hash, count] : compiles) EXPECT_EQ(count, 1) << hash;
  EXPECT_TRUE(files_with(".tmp.").empty());
  for (int i = 0; i < kKeys; ++i)
    EXPECT_TRUE(
        JitCache({dir_}).lookup(make_jit_cache_key(fields("op" + std::to_string(i)))).is_ok());
}

TEST_F(JitCacheTest, AProcessKilledWhilePublishingLeavesNoVisibleEntry) {
  const JitCacheKey key = make_jit_cache_key(fields());
  const fs::path target = fs::path(dir_) / key.relative_path;
  fs::create_directories(target.parent_path());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    (void)publish_file(target.string(), encode_cache_entry(entry_for(key)),
                       [] { ::raise(SIGKILL); });
    std::_Exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_FALSE(fs::exists(target));
  EXPECT_EQ(files_with(".tmp.").size(), 1u);  // only an invisible temporary remains
  EXPECT_FALSE(JitCache({dir_}).lookup(key).is_ok());
}

TEST_F(JitCacheTest, EvictionKeepsTheSizeBoundDroppingTheLeastRecentlyUsed) {
  JitCache cache({dir_}, {20000, std::chrono::milliseconds(1000)});
  std::vector<JitCacheKey> keys;
  for (int i = 0; i < 8; ++i) {
    keys.push_back(make_jit_cache_key(fields("op" + std::to_string(i))));
    ASSERT_TRUE(
        cache
            .get_or_compile(keys.back(),
                            [&]() -> Result<CacheEntry> { return entry_for(keys.back(), 4000); })
            .is_ok());
    if (i == 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(cache.lookup(keys[0]).is_ok()) << i;  // key 0 stays recently used
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_LE(cache.size_bytes(), 20000u);
  EXPECT_TRUE(cache.lookup(keys[0]).is_ok());
  EXPECT_TRUE(cache.lookup(keys[7]).is_ok());
  EXPECT_FALSE(cache.lookup(keys[1]).is_ok());
}

// Runs `body` as a user for whom `readonly` is not writable: as root (who
// may write anywhere) in a child that drops to nobody, else directly.
int run_without_write_access(const fs::path& root, const std::function<int()>& body) {
  if (::geteuid() != 0) return body();
  const pid_t child = ::fork();
  if (child == 0) {
    if (::chown(root.c_str(), 65534, 65534) != 0 || ::setgid(65534) != 0 || ::setuid(65534) != 0)
      std::_Exit(90);
    std::_Exit(body());
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

TEST_F(JitCacheTest, AReadOnlyDirectoryIsSearchedAndTheNextWritableOneWritten) {
  const std::string readonly = (root_ / "readonly").string();
  const JitCacheKey old_key = make_jit_cache_key(fields("old"));
  ASSERT_TRUE(
      JitCache({readonly})
          .get_or_compile(old_key, [&]() -> Result<CacheEntry> { return entry_for(old_key); })
          .is_ok());
  for (auto& p : fs::recursive_directory_iterator(readonly)) {
    const auto perms = p.is_directory()
                           ? fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec
                           : fs::perms::owner_read | fs::perms::others_read;
    fs::permissions(p, perms);
  }
  fs::permissions(readonly, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::others_read |
                                fs::perms::others_exec);
  fs::permissions(root_, fs::perms::owner_all | fs::perms::others_read | fs::perms::others_exec);
  const int code = run_without_write_access(root_, [&] {
    JitCache cache({readonly, dir_});
    if (cache.writable_directory() != dir_) return 1;
    if (!cache.lookup(old_key).is_ok()) return 2;
    const JitCacheKey new_key = make_jit_cache_key(fields("new"));
    if (!cache.get_or_compile(new_key, [&]() -> Result<CacheEntry> { return entry_for(new_key); })
             .is_ok())
      return 3;
    return fs::exists(fs::path(dir_) / new_key.relative_path) ? 0 : 4;
  });
  EXPECT_EQ(code, 0)
      << "1: wrong writable dir, 2: read-only entry missed, 3: compile failed, 4: not stored";
}

TEST_F(JitCacheTest, NoWritableDirectoryStillServesFromMemory) {
  JitCache cache({"/proc/convjit-cannot-exist"});
  EXPECT_TRUE(cache.writable_directory().empty());
  const JitCacheKey key = make_jit_cache_key(fields());
  bool compiled = false;
  auto r = cache.get_or_compile(
      key, [&]() -> Result<CacheEntry> { return entry_for(key); }, &compiled);
  EXPECT_TRUE(r.is_ok());
  EXPECT_TRUE(compiled);
}

// ---- flock that fails, or does nothing (Lustre, NFS) ----------------------

int g_flock_errno = 0;
int failing_flock(int, int) {
  errno = g_flock_errno;
  return -1;
}
int no_op_flock(int, int) { return 0; }  // NFS mounted nolock: "locked", but nothing is

struct FlockStandIn {
  explicit FlockStandIn(FlockFunction f) { set_flock_for_testing(f); }
  ~FlockStandIn() { set_flock_for_testing(nullptr); }
};

// Each error flock gives where it does not work: the compile goes on at
// once without the lock (before, it spun until the 60 s timeout per key),
// and the published entry is whole.
TEST_F(JitCacheTest, FlockThatFailsFallsBackToALockFreePublishWithoutWaiting) {
  for (int error : {ENOSYS, ENOLCK, EOPNOTSUPP}) {
    SCOPED_TRACE(std::strerror(error));
    g_flock_errno = error;
    FlockStandIn stand_in(failing_flock);
    JitCacheOptions options;
    options.lock_timeout = std::chrono::hours(1);  // a wait would show as a ctest timeout
    JitCache cache({dir_ + std::to_string(error)}, options);
    const JitCacheKey key = make_jit_cache_key(fields("op" + std::to_string(error)));
    bool compiled = false;
    const auto start = std::chrono::steady_clock::now();
    auto r = cache.get_or_compile(key, [&]() -> Result<CacheEntry> { return entry_for(key); },
                                  &compiled);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
    ASSERT_TRUE(r.is_ok()) << r.status().message();
    EXPECT_TRUE(compiled);
    auto stored = JitCache({dir_ + std::to_string(error)}).lookup(key);
    ASSERT_TRUE(stored.is_ok()) << stored.status().message();
    EXPECT_EQ(stored.value().payload, entry_for(key).payload);
  }
  EXPECT_TRUE(files_with(".tmp.").empty());
}

// With a lock that locks nothing, processes may compile the same key at
// once: the worst case is a duplicate compile, and every entry stays whole.
TEST_F(JitCacheTest, FlockThatLocksNothingCostsDuplicateCompilesNeverATornEntry) {
  FlockStandIn stand_in(no_op_flock);
  const std::string log = (root_ / "compiles.log").string();
  const auto codes = test::run_in_processes_and_threads(4, 2, [&](int, int) {
    JitCache cache({dir_});
    for (int i = 0; i < 4; ++i) {
      const JitCacheKey key = make_jit_cache_key(fields("op" + std::to_string(i)));
      auto r = cache.get_or_compile(key, [&]() -> Result<CacheEntry> {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        std::ofstream(log, std::ios::app) << key.hash << "\n";
        return entry_for(key, 1 << 16);
      });
      if (!r.is_ok() || r.value().payload != entry_for(key, 1 << 16).payload) return false;
    }
    return true;
  });
  EXPECT_EQ(codes, std::vector<int>(4, 0));
  std::ifstream in(log);
  int compiles = 0;
  for (std::string line; std::getline(in, line);) ++compiles;
  EXPECT_GE(compiles, 4);
  EXPECT_TRUE(files_with(".tmp.").empty());
  const auto report = JitCache({dir_}).verify();
  EXPECT_TRUE(report.quarantined.empty());
  EXPECT_EQ(JitCache({dir_}).entries().size(), 4u);
}

// ---- tiers ------------------------------------------------------------------

TEST_F(JitCacheTest, TheLocalTierIsSearchedFirstAndFilledFromTheSharedOne) {
  const std::string local = (root_ / "local").string();
  const JitCacheKey key = make_jit_cache_key(fields());
  ASSERT_TRUE(JitCache({dir_}).store_shared(key, entry_for(key)).is_ok());
  JitCache cache(JitCacheTiers{local, {dir_}, true});
  EXPECT_EQ(cache.local_directory(), local);
  EXPECT_EQ(cache.primary_directory(), local);
  EXPECT_FALSE(cache.lookup_local(key).is_ok());
  ASSERT_TRUE(cache.lookup(key).is_ok());         // from the shared tier...
  EXPECT_TRUE(cache.lookup_local(key).is_ok());  // ...and now in the local one
  EXPECT_EQ(fs::status(local).permissions() & fs::perms::all, fs::perms::owner_all);
  // A compile goes to both tiers when this process writes the shared one...
  const JitCacheKey other = make_jit_cache_key(fields("other"));
  ASSERT_TRUE(cache.get_or_compile(other, [&]() -> Result<CacheEntry> { return entry_for(other); })
                  .is_ok());
  EXPECT_TRUE(fs::exists(fs::path(local) / other.relative_path));
  EXPECT_TRUE(fs::exists(fs::path(dir_) / other.relative_path));
  // ...and to the local one only when it does not (a rank other than 0).
  JitCache rank(JitCacheTiers{(root_ / "local2").string(), {dir_}, false});
  const JitCacheKey third = make_jit_cache_key(fields("third"));
  ASSERT_TRUE(rank.get_or_compile(third, [&]() -> Result<CacheEntry> { return entry_for(third); })
                  .is_ok());
  EXPECT_TRUE(fs::exists(root_ / "local2" / third.relative_path));
  EXPECT_FALSE(fs::exists(fs::path(dir_) / third.relative_path));
}

TEST_F(JitCacheTest, ALocalTierOthersCanWriteIsNotUsed) {
  const fs::path local = root_ / "open";
  fs::create_directories(local);
  fs::permissions(local, fs::perms::all);  // 0777, as a planted /dev/shm directory might be
  JitCache cache(JitCacheTiers{local.string(), {dir_}, true});
  EXPECT_TRUE(cache.local_directory().empty());
  EXPECT_EQ(cache.primary_directory(), dir_);
  JitCache unusable(JitCacheTiers{"/proc/convjit-no-local", {dir_}, true});
  EXPECT_TRUE(unusable.local_directory().empty());
}

TEST(CacheTiers, OnlyRankZeroOfALaunchedJobWritesTheSharedTier) {
  static std::map<std::string, std::string> env;
  const EnvLookup lookup = [](const char* name) -> const char* {
    const auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  env = {};
  EXPECT_TRUE(writes_shared_tier(lookup));
  env = {{"OMPI_COMM_WORLD_RANK", "0"}};
  EXPECT_TRUE(writes_shared_tier(lookup));
  env = {{"OMPI_COMM_WORLD_RANK", "3"}};
  EXPECT_FALSE(writes_shared_tier(lookup));
  env = {{"SLURM_PROCID", "12"}};
  EXPECT_FALSE(writes_shared_tier(lookup));
  env = {{"PMIX_RANK", "0"}};
  EXPECT_TRUE(writes_shared_tier(lookup));
}

}  // namespace
}  // namespace convjit
