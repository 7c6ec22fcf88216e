// The persistent JIT cache: one self-validating file per compiled kernel,
// in a version-namespaced, sharded layout under a cache directory:
//
//   <dir>/jit/v1/nvrtc<version>/<arch>/<2 hex>/<hash>.cjit
//
// Two tiers (DESIGN.md section 11): a node-local one, searched first and
// written by every compile, and the shared cache search path, read-mostly:
// a hit there is copied into the local tier, and only the job's one writer
// (writes_shared_tier) publishes compiles to its first writable directory.
//
// Rules (DESIGN.md section 5): the key preimage is stored and compared;
// files are published by temp + fsync + rename and read without locks; a
// short per-key lock with a timeout and a re-check keeps processes from
// compiling the same key twice, and where flock fails the compile goes on
// without it (file_lock.hpp); damaged entries are quarantined and rebuilt
// with a warning; a size bound evicts by last use (the file's mtime,
// touched on every hit); directories are created 0700; read-only
// directories are searched but never written.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cache/cache_entry.hpp"

namespace convjit {

struct JitCacheKey {
  std::string preimage;       // every input that changes the binary, one per line
  std::string hash;           // 32 hex digits of XXH3-128 over the preimage
  std::string relative_path;  // jit/v1/nvrtc<version>/<arch>/<hash[0:2]>/<hash>.cjit
};

// Fields that determine a binary.  Any change gives another key.
struct JitKeyFields {
  std::string descriptor;      // canonical name
  std::string source;          // the generated source
  std::string templates_hash;  // embedded_templates_hash()
  std::string convjit_version;
  std::string nvrtc_version;
  std::string arch;  // exact sm_XX[a]
  std::vector<std::string> options;
};

[[nodiscard]] JitCacheKey make_jit_cache_key(const JitKeyFields& fields);

struct JitCacheOptions {
  std::uint64_t max_bytes = std::uint64_t{2} << 30;  // 2 GiB
  std::chrono::milliseconds lock_timeout{60000};
  // A publish writes its temporary file in milliseconds; one this old was
  // left by a process that died mid-publish.  Generous, so that clocks of
  // nodes sharing the cache may disagree.
  std::chrono::seconds stale_temporary_age{3600};
};

// One file of the cache, as `convjit cache ls` shows it.
struct CacheFileInfo {
  std::string path;
  std::uint64_t bytes = 0;
  std::int64_t last_used = 0;  // seconds since the epoch (the file's mtime)
  std::string descriptor;      // from the key preimage; empty if unreadable
  std::string arch;
  bool valid = false;   // magic, format and checksum check out
  std::string problem;  // why not, when !valid
};

// Where the cache lives (cache_tiers.hpp makes them from the settings).
struct JitCacheTiers {
  // Three arguments, so that JitCache({dir}) stays the one-tier constructor.
  JitCacheTiers(std::string local_tier, std::vector<std::string> shared_tier, bool writes_shared)
      : local(std::move(local_tier)), shared(std::move(shared_tier)), write_shared(writes_shared) {}

  std::string local;                // node-local and writable; empty: none
  std::vector<std::string> shared;  // the cache search path
  bool write_shared = true;         // publish compiles to shared's first writable directory
};

class JitCache {
 public:
  using Compile = std::function<Result<CacheEntry>()>;

  // One tier: `search_path`, written by compiles (no local tier).
  explicit JitCache(std::vector<std::string> search_path, JitCacheOptions options = {});
  // A local tier that is not a private directory of this user is not used
  // (a warning names it and the fix).
  explicit JitCache(JitCacheTiers tiers, JitCacheOptions options = {});

  // The shared tier's first writable directory, or empty when none is.
  [[nodiscard]] const std::string& writable_directory() const { return writable_; }
  // The local tier, or empty when there is none.
  [[nodiscard]] const std::string& local_directory() const { return local_; }
  // Where compiles lock, write and keep their scratch: the local tier, else
  // the shared writable directory; empty when neither exists.
  [[nodiscard]] const std::string& primary_directory() const {
    return local_.empty() ? writable_ : local_;
  }

  // The entry for `key` from the local tier, else from the shared one (and
  // then copied into the local tier), or a miss.  A damaged entry is
  // quarantined (when its directory is writable) and reported as a miss.
  [[nodiscard]] Result<CacheEntry> lookup(const JitCacheKey& key);
  // One tier alone, nothing copied: what the collective preload asks.
  [[nodiscard]] Result<CacheEntry> lookup_local(const JitCacheKey& key);
  [[nodiscard]] Result<CacheEntry> lookup_shared(const JitCacheKey& key);

  // Publishes an entry into one tier; NOT_AVAILABLE when it has no
  // writable directory.  The size bound is not enforced here: a batch of
  // stores ends with one enforce_size_bounds(), not a walk per entry.
  [[nodiscard]] Status store_local(const JitCacheKey& key, const CacheEntry& entry);
  [[nodiscard]] Status store_shared(const JitCacheKey& key, const CacheEntry& entry);

  // Looks up `key`; on a miss compiles under the per-key lock (re-checking
  // after taking it) and stores the result.  *compiled tells which happened.
  [[nodiscard]] Result<CacheEntry> get_or_compile(const JitCacheKey& key, const Compile& compile,
                                                  bool* compiled = nullptr);

  // Moves `key`'s entry to quarantine, e.g. after the driver refused to load
  // its CUBIN; the next get_or_compile rebuilds it.
  void quarantine_entry(const JitCacheKey& key, const std::string& reason);

  // Removes stale temporary files, then least recently used entries until
  // the total is within max_bytes, in the shared writable directory.
  void enforce_size_bound() { enforce_size_bound(writable_); }
  // The same in the tiers a batch of store_local/store_shared wrote.
  void enforce_size_bounds(bool local, bool shared);

  // Total bytes of entries and temporary files in the shared writable directory.
  [[nodiscard]] std::uint64_t size_bytes() const;

  // Removes temporary files older than stale_temporary_age (left by
  // processes killed while publishing); returns their paths.
  std::vector<std::string> remove_stale_temporaries();

  // Every entry of the writable directory, decoded (`convjit cache ls`).
  [[nodiscard]] std::vector<CacheFileInfo> entries() const;

  // Checks every entry; damaged ones go to quarantine (the next lookup
  // compiles them again), stale temporary files are removed.
  struct VerifyReport {
    std::vector<CacheFileInfo> quarantined;
    std::vector<std::string> stale_temporaries;
  };
  [[nodiscard]] VerifyReport verify();

  // Removes every entry (and the quarantine); returns the bytes freed.
  std::uint64_t clear();

  [[nodiscard]] std::uint64_t max_bytes() const { return options_.max_bytes; }

 private:
  [[nodiscard]] Result<CacheEntry> lookup_in(const std::string& dir, const JitCacheKey& key);
  [[nodiscard]] Status store_in(const std::string& dir, const JitCacheKey& key,
                                const CacheEntry& entry);
  // store_in, then the size bound of `dir`: one entry at a time.
  [[nodiscard]] Status store_bounded(const std::string& dir, const JitCacheKey& key,
                                     const CacheEntry& entry);
  // Compiles and publishes holding the key's lock where it can be taken,
  // re-checking the cache once it is held.
  [[nodiscard]] Result<CacheEntry> compile_and_store(const JitCacheKey& key, const Compile& compile,
                                                     bool& compiled);
  void enforce_size_bound(const std::string& dir);
  // Moves a damaged entry aside (when it lies in a writable tier); false
  // when it could not be moved.
  bool quarantine(const std::string& path);
  void warn_damaged(const std::string& path, const std::string& reason, bool moved) const;

  std::vector<std::string> search_path_;
  std::string writable_;
  std::string local_;
  bool write_shared_ = true;
  JitCacheOptions options_;
};

}  // namespace convjit
