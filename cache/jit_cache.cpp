#include "cache/jit_cache.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/file.h>
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
#include "dispatcher/observe/warnings.hpp"

namespace convjit {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLayoutVersion = "v1";

bool is_entry(const fs::path& path) { return path.extension() == ".cjit"; }

// A per-key advisory lock file, held for the compile; released on scope exit.
class KeyLock {
 public:
  KeyLock(const std::string& path, std::chrono::milliseconds timeout) {
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd_ < 0) return;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      if (std::chrono::steady_clock::now() >= deadline) return;  // never block forever
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    held_ = true;
  }
  ~KeyLock() {
    if (fd_ >= 0) ::close(fd_);  // also releases the lock
  }
  KeyLock(const KeyLock&) = delete;
  KeyLock& operator=(const KeyLock&) = delete;
  [[nodiscard]] bool held() const { return held_; }

 private:
  int fd_ = -1;
  bool held_ = false;
};

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
    : search_path_(std::move(search_path)),
      writable_(first_writable_directory(search_path_)),
      options_(options) {}

bool JitCache::quarantine(const std::string& path) {
  const fs::path file(path);
  const fs::path dir = fs::path(writable_) / "jit" / "quarantine";
  std::error_code error;
  if (writable_.empty() || path.rfind(writable_, 0) != 0 || !make_private_directories(dir))
    return false;
  fs::rename(file, dir / (file.filename().string() + fmt::format(".{}", ::time(nullptr))), error);
  return !error;
}

void JitCache::warn_damaged(const std::string& path, const std::string& reason, bool moved) const {
  warn(fmt::format("damaged JIT cache entry {} ({}); {}, compiling it again", path, reason,
                   moved ? "moved to quarantine" : "ignored"));
}

void JitCache::quarantine_entry(const JitCacheKey& key, const std::string& reason) {
  for (const std::string& dir : search_path_) {
    const std::string path = (fs::path(dir) / key.relative_path).string();
    std::error_code error;
    if (fs::exists(path, error)) warn_damaged(path, reason, quarantine(path));
  }
}

Result<CacheEntry> JitCache::lookup(const JitCacheKey& key) {
  for (const std::string& dir : search_path_) {
    const std::string path = (fs::path(dir) / key.relative_path).string();
    std::error_code error;
    if (!fs::exists(path, error)) continue;
    // A cubin is code, trusted on the same terms as a tuned library.
    if (Status trusted = check_code_trust_below(dir, path); !trusted.is_ok()) {
      warn_once(fmt::format("JIT cache entry not loaded: {}", trusted.message()));
      continue;
    }
    auto bytes = read_file(path);
    if (!bytes.is_ok()) continue;
    auto entry = decode_cache_entry(bytes.value());
    if (entry.is_ok() && entry.value().preimage != key.preimage)
      entry = Status::invalid("its key preimage differs from the requested key");
    if (!entry.is_ok()) {
      warn_damaged(path, entry.status().message(), quarantine(path));
      continue;
    }
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // last-used stamp for LRU eviction
    return entry;
  }
  return Status::not_available("not in the JIT cache");
}

Status JitCache::store(const JitCacheKey& key, const CacheEntry& entry) {
  if (writable_.empty()) return Status::not_available("no writable cache directory");
  const fs::path path = fs::path(writable_) / key.relative_path;
  if (!make_private_directories(path.parent_path()))
    return Status::not_available(
        fmt::format("cannot create {}: {}", path.parent_path().string(), std::strerror(errno)));
  Status published = publish_file(path.string(), encode_cache_entry(entry));
  if (published.is_ok()) enforce_size_bound();
  return published;
}

Result<CacheEntry> JitCache::get_or_compile(const JitCacheKey& key, const Compile& compile,
                                            bool* compiled) {
  if (compiled) *compiled = false;
  if (auto hit = lookup(key); hit.is_ok()) return hit;
  std::unique_ptr<KeyLock> lock;
  if (!writable_.empty()) {
    const fs::path path = fs::path(writable_) / key.relative_path;
    if (make_private_directories(path.parent_path()))
      lock = std::make_unique<KeyLock>(path.string() + ".lock", options_.lock_timeout);
    // Another process may have published it while we waited for the lock.
    if (lock && lock->held())
      if (auto hit = lookup(key); hit.is_ok()) return hit;
  }
  auto entry = compile();  // on a lock timeout: compile privately and carry on
  if (!entry.is_ok()) return entry;
  if (compiled) *compiled = true;
  if (Status stored = store(key, entry.value()); !stored.is_ok() && !writable_.empty())
    warn(fmt::format("could not store a JIT cache entry: {}", stored.message()));
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
void JitCache::enforce_size_bound() {
  if (writable_.empty()) return;
  const auto cutoff = fs::file_time_type::clock::now() - options_.stale_temporary_age;
  struct File {
    fs::path path;
    fs::file_time_type used;
    std::uint64_t bytes;
  };
  std::vector<File> files;
  std::uint64_t total = 0;
  std::error_code error;
  for (auto it = fs::recursive_directory_iterator(fs::path(writable_) / "jit", error);
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
