#include "cache/jit_cache.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <thread>

#include "cache/cache_directories.hpp"
#include "cache/code_trust.hpp"
#include "cache/file_lock.hpp"
#include "dispatcher/observe/warnings.hpp"

namespace convjit {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLayoutVersion = "v1";

bool is_entry(const fs::path& path) { return path.extension() == ".cjit"; }

}  // namespace

JitCacheKey make_jit_cache_key(const JitKeyFields& f) {
  JitCacheKey key;
  const XXH64_hash_t source_hash = XXH3_64bits(f.source.data(), f.source.size());
  key.preimage = fmt::format(
      "convjit-jit-key "
      "{}\ndescriptor={}\nconvjit={}\ntemplates={}\nsource={:016x}\nnvrtc={}\narch={}\n"
      "options={}\n",
      kLayoutVersion, f.descriptor, f.convjit_version, f.templates_hash, source_hash,
      f.nvrtc_version, f.arch, fmt::join(f.options, " "));
  const XXH128_hash_t h = XXH3_128bits(key.preimage.data(), key.preimage.size());
  key.hash = fmt::format("{:016x}{:016x}", h.high64, h.low64);
  key.relative_path = fmt::format("jit/{}/nvrtc{}/{}/{}/{}.cjit", kLayoutVersion, f.nvrtc_version,
                                  f.arch, key.hash.substr(0, 2), key.hash);
  return key;
}

JitCache::JitCache(std::vector<std::string> search_path, JitCacheOptions options)
    : JitCache(JitCacheTiers{"", std::move(search_path), true}, options) {}

JitCache::JitCache(JitCacheTiers tiers, JitCacheOptions options)
    : search_path_(std::move(tiers.shared)),
      writable_(first_writable_directory(search_path_)),
      write_shared_(tiers.write_shared),
      options_(options) {
  if (tiers.local.empty()) return;
  if (Status usable = prepare_local_tier(tiers.local); !usable.is_ok()) {
    warn_once(fmt::format("no node-local JIT cache tier: {}", usable.message()));
    return;
  }
  local_ = std::move(tiers.local);
}

bool JitCache::quarantine(const std::string& path) {
  for (const std::string& root : {local_, writable_}) {
    if (root.empty() || path.rfind(root, 0) != 0) continue;
    const fs::path dir = fs::path(root) / "jit" / "quarantine";
    if (!make_private_directories(dir)) return false;
    const fs::path file(path);
    std::error_code error;
    fs::rename(file, dir / (file.filename().string() + fmt::format(".{}", ::time(nullptr))), error);
    return !error;
  }
  return false;
}

void JitCache::warn_damaged(const std::string& path, const std::string& reason, bool moved) const {
  warn(fmt::format("damaged JIT cache entry {} ({}); {}, compiling it again", path, reason,
                   moved ? "moved to quarantine" : "ignored"));
}

void JitCache::quarantine_entry(const JitCacheKey& key, const std::string& reason) {
  std::vector<std::string> dirs = search_path_;
  if (!local_.empty()) dirs.insert(dirs.begin(), local_);
  for (const std::string& dir : dirs) {
    const std::string path = (fs::path(dir) / key.relative_path).string();
    std::error_code error;
    if (fs::exists(path, error)) warn_damaged(path, reason, quarantine(path));
  }
}

Result<CacheEntry> JitCache::lookup_in(const std::string& dir, const JitCacheKey& key) {
  const std::string path = (fs::path(dir) / key.relative_path).string();
  std::error_code error;
  if (!fs::exists(path, error)) return Status::not_available("not in the JIT cache");
  // A cubin is code, trusted on the same terms as a tuned library.
  if (Status trusted = check_code_trust_below(dir, path); !trusted.is_ok()) {
    warn_once(fmt::format("JIT cache entry not loaded: {}", trusted.message()));
    return Status::not_available("not trusted");
  }
  auto bytes = read_file(path);
  if (!bytes.is_ok()) return bytes.status();
  auto entry = decode_cache_entry(bytes.value());
  if (entry.is_ok() && entry.value().preimage != key.preimage)
    entry = Status::invalid("its key preimage differs from the requested key");
  if (!entry.is_ok()) {
    warn_damaged(path, entry.status().message(), quarantine(path));
    return Status::not_available("damaged");
  }
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // last-used stamp for LRU eviction
  return entry;
}

Result<CacheEntry> JitCache::lookup_local(const JitCacheKey& key) {
  if (local_.empty()) return Status::not_available("no local JIT cache tier");
  return lookup_in(local_, key);
}

Result<CacheEntry> JitCache::lookup_shared(const JitCacheKey& key) {
  for (const std::string& dir : search_path_)
    if (auto hit = lookup_in(dir, key); hit.is_ok()) return hit;
  return Status::not_available("not in the JIT cache");
}

Result<CacheEntry> JitCache::lookup(const JitCacheKey& key) {
  if (auto hit = lookup_local(key); hit.is_ok()) return hit;
  auto hit = lookup_shared(key);
  // Later loads on this node then read node-local files only.
  if (hit.is_ok() && !local_.empty())
    if (Status copied = store_bounded(local_, key, hit.value()); !copied.is_ok())
      warn_once(fmt::format("could not copy a JIT cache entry into the local tier: {}",
                            copied.message()));
  return hit;
}

Status JitCache::store_in(const std::string& dir, const JitCacheKey& key, const CacheEntry& entry) {
  const fs::path path = fs::path(dir) / key.relative_path;
  if (!make_private_directories(path.parent_path()))
    return Status::not_available(
        fmt::format("cannot create {}: {}", path.parent_path().string(), std::strerror(errno)));
  return publish_file(path.string(), encode_cache_entry(entry));
}

Status JitCache::store_bounded(const std::string& dir, const JitCacheKey& key,
                               const CacheEntry& entry) {
  Status published = store_in(dir, key, entry);
  if (published.is_ok()) enforce_size_bound(dir);
  return published;
}

void JitCache::enforce_size_bounds(bool local, bool shared) {
  if (local) enforce_size_bound(local_);
  if (shared) enforce_size_bound(writable_);
}

Status JitCache::store_local(const JitCacheKey& key, const CacheEntry& entry) {
  if (local_.empty()) return Status::not_available("no local JIT cache tier");
  return store_in(local_, key, entry);
}

Status JitCache::store_shared(const JitCacheKey& key, const CacheEntry& entry) {
  if (writable_.empty()) return Status::not_available("no writable cache directory");
  return store_in(writable_, key, entry);
}

Result<CacheEntry> JitCache::compile_and_store(const JitCacheKey& key, const Compile& compile,
                                               bool& compiled) {
  const std::string& primary = primary_directory();
  std::unique_ptr<FileLock> lock;  // held until the entry is published
  const fs::path path = fs::path(primary) / key.relative_path;
  if (!primary.empty() && make_private_directories(path.parent_path()))
    lock = std::make_unique<FileLock>(path.string() + ".lock", options_.lock_timeout);
  if (lock && lock->state() == LockState::unsupported)
    warn_once(fmt::format(
        "JIT cache {}: {}; compiling without a lock (another process may compile the same "
        "kernel; entries stay whole)",
        primary, lock->problem()));
  // Another process may have published it while we waited for the lock.
  if (lock && lock->held())
    if (auto hit = lookup(key); hit.is_ok()) return hit;
  auto entry = compile();  // unlocked: compile privately and carry on
  compiled = entry.is_ok();
  if (!compiled) return entry;
  // Publishing is temp file + rename, so an unlocked race leaves one whole
  // entry whichever rename lands last.
  for (const std::string& dir : {local_, write_shared_ ? writable_ : std::string()})
    if (!dir.empty())
      if (Status stored = store_bounded(dir, key, entry.value()); !stored.is_ok())
        warn(fmt::format("could not store a JIT cache entry: {}", stored.message()));
  return entry;
}

Result<CacheEntry> JitCache::get_or_compile(const JitCacheKey& key, const Compile& compile,
                                            bool* compiled) {
  if (compiled) *compiled = false;
  if (auto hit = lookup(key); hit.is_ok()) return hit;
  bool fresh = false;
  auto entry = compile_and_store(key, compile, fresh);
  if (compiled) *compiled = fresh;
  return entry;
}

std::uint64_t JitCache::size_bytes() const {
  std::uint64_t total = 0;
  std::error_code error;
  if (writable_.empty()) return 0;
  for (auto it = fs::recursive_directory_iterator(fs::path(writable_) / "jit", error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error))
    if (it->is_regular_file(error) && (is_entry(it->path()) || is_publish_temporary(it->path())))
      total += it->file_size(error);
  return total;
}

std::vector<std::string> JitCache::remove_stale_temporaries() {
  std::vector<std::string> removed;
  std::error_code error;
  if (writable_.empty()) return removed;
  const auto cutoff = fs::file_time_type::clock::now() - options_.stale_temporary_age;
  std::vector<fs::path> stale;
  for (auto it = fs::recursive_directory_iterator(fs::path(writable_) / "jit", error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error))
    if (it->is_regular_file(error) && is_publish_temporary(it->path()) &&
        it->last_write_time(error) < cutoff)
      stale.push_back(it->path());
  for (const fs::path& path : stale)
    if (fs::remove(path, error)) removed.push_back(path.string());
  return removed;
}

// One walk over the tree per store: stale temporaries go, the others count.
void JitCache::enforce_size_bound(const std::string& dir) {
  if (dir.empty()) return;
  const auto cutoff = fs::file_time_type::clock::now() - options_.stale_temporary_age;
  struct File {
    fs::path path;
    fs::file_time_type used;
    std::uint64_t bytes;
  };
  std::vector<File> files;
  std::uint64_t total = 0;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(fs::path(dir) / "jit", error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (!it->is_regular_file(error)) continue;
    if (is_publish_temporary(it->path())) {
      std::error_code ignored;  // a failed removal must not end the walk
      if (it->last_write_time(ignored) < cutoff)
        fs::remove(it->path(), ignored);  // left by a process killed while publishing
      else
        total += it->file_size(error);  // a publish in flight
      continue;
    }
    if (!is_entry(it->path())) continue;
    files.push_back({it->path(), it->last_write_time(error), it->file_size(error)});
    total += files.back().bytes;
  }
  if (total <= options_.max_bytes) return;
  std::sort(files.begin(), files.end(),
            [](const File& a, const File& b) { return a.used < b.used; });
  for (const File& f : files) {
    if (total <= options_.max_bytes) break;
    if (fs::remove(f.path, error)) total -= f.bytes;
  }
}

namespace {

std::string preimage_field(const std::string& preimage, const std::string& name) {
  const std::string prefix = "\n" + name + "=";
  const auto at = preimage.find(prefix);
  if (at == std::string::npos) return {};
  const auto start = at + prefix.size();
  return preimage.substr(start, preimage.find('\n', start) - start);
}

}  // namespace

std::vector<CacheFileInfo> JitCache::entries() const {
  std::vector<CacheFileInfo> out;
  std::error_code error;
  if (writable_.empty()) return out;
  for (auto it =
           fs::recursive_directory_iterator(fs::path(writable_) / "jit" / kLayoutVersion, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error)) {
    if (!it->is_regular_file(error) || !is_entry(it->path())) continue;
    CacheFileInfo info;
    info.path = it->path().string();
    info.bytes = it->file_size(error);
    struct stat st {};
    if (::stat(info.path.c_str(), &st) == 0) info.last_used = st.st_mtime;
    auto bytes = read_file(info.path);
    auto entry =
        bytes.is_ok() ? decode_cache_entry(bytes.value()) : Result<CacheEntry>(bytes.status());
    info.valid = entry.is_ok();
    if (entry.is_ok()) {
      info.descriptor = preimage_field(entry.value().preimage, "descriptor");
      info.arch = preimage_field(entry.value().preimage, "arch");
    } else {
      info.problem = entry.status().message();
    }
    out.push_back(std::move(info));
  }
  std::sort(out.begin(), out.end(),
            [](const auto& a, const auto& b) { return a.last_used > b.last_used; });
  return out;
}

JitCache::VerifyReport JitCache::verify() {
  VerifyReport report;
  for (CacheFileInfo& info : entries())
    if (!info.valid) {
      if (!quarantine(info.path)) info.problem += "; could not be moved to quarantine";
      report.quarantined.push_back(std::move(info));
    }
  report.stale_temporaries = remove_stale_temporaries();
  return report;
}

std::uint64_t JitCache::clear() {
  if (writable_.empty()) return 0;
  std::uint64_t freed = 0;
  std::error_code error;
  const fs::path jit = fs::path(writable_) / "jit";
  for (auto it = fs::recursive_directory_iterator(jit, error);
       !error && it != fs::recursive_directory_iterator(); it.increment(error))
    if (it->is_regular_file(error)) freed += it->file_size(error);
  fs::remove_all(jit, error);
  return freed;
}

}  // namespace convjit
