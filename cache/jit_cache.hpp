// The persistent JIT cache: one self-validating file per compiled kernel,
// in a version-namespaced, sharded layout under the first writable
// directory of the cache search path:
//
//   <dir>/jit/v1/nvrtc<version>/<arch>/<2 hex>/<hash>.cjit
//
// Rules (DESIGN.md section 5): the key preimage is stored and compared;
// files are published by temp + fsync + rename and read without locks; a
// short per-key lock with a timeout and a re-check keeps processes from
// compiling the same key twice; damaged entries are quarantined and rebuilt
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

class JitCache {
 public:
  using Compile = std::function<Result<CacheEntry>()>;

  JitCache(std::vector<std::string> search_path, JitCacheOptions options = {});

  // The directory new entries go to, or empty when none is writable.
  [[nodiscard]] const std::string& writable_directory() const { return writable_; }

  // The entry for `key` from any directory, or a miss.  A damaged entry is
  // quarantined (when its directory is writable) and reported as a miss.
  [[nodiscard]] Result<CacheEntry> lookup(const JitCacheKey& key);

  // Looks up `key`; on a miss compiles under the per-key lock (re-checking
  // after taking it) and stores the result.  *compiled tells which happened.
  [[nodiscard]] Result<CacheEntry> get_or_compile(const JitCacheKey& key, const Compile& compile,
                                                  bool* compiled = nullptr);

  // Moves `key`'s entry to quarantine, e.g. after the driver refused to load
  // its CUBIN; the next get_or_compile rebuilds it.
  void quarantine_entry(const JitCacheKey& key, const std::string& reason);

  // Removes stale temporary files, then least recently used entries until
  // the total is within max_bytes.
  void enforce_size_bound();

  // Total bytes of entries and temporary files in the writable directory.
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
  [[nodiscard]] Status store(const JitCacheKey& key, const CacheEntry& entry);
  // Moves a damaged entry aside (when it lies in the writable directory);
  // false when it could not be moved.
  bool quarantine(const std::string& path);
  void warn_damaged(const std::string& path, const std::string& reason, bool moved) const;

  std::vector<std::string> search_path_;
  std::string writable_;
  JitCacheOptions options_;
};

}  // namespace convjit
