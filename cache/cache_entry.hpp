// One self-validating JIT cache file: magic, format version, the key
// preimage, metadata, payload length and a checksum, then the CUBIN.
// A hash names the file; the preimage stored inside is the identity and is
// compared on every load.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "dispatcher/result.hpp"

namespace convjit {

inline constexpr std::uint32_t kCacheEntryFormat = 1;

struct CacheEntry {
  std::string preimage;  // everything that determines the binary
  std::string metadata;  // JSON: entries, workspace, ptxas statistics, compile time
  std::vector<char> payload;
};

// Serialised bytes of an entry.
[[nodiscard]] std::string encode_cache_entry(const CacheEntry& entry);

// Parses and verifies bytes; errors say what is wrong (truncated, bad
// magic, other format version, checksum mismatch).
[[nodiscard]] Result<CacheEntry> decode_cache_entry(const std::string& bytes);

// Publishes `bytes` at `path` atomically: a unique temporary file in the
// same directory, fsync, rename, fsync of the directory.  Readers never see
// a partial file; a crash leaves at most a temporary, never a torn entry.
// `before_rename` lets tests stop the process at the worst moment.
[[nodiscard]] Status publish_file(const std::string& path, const std::string& bytes,
                                  const std::function<void()>& before_rename = {});

struct PublishOptions {
  unsigned mode = 0600;  // the file's permissions, exactly: the umask does not apply
  // false: an existing `path` is left alone and the call fails
  // (INVALID_ARGUMENT, "<path> exists"), atomically: link(2), not a check
  // before the rename.
  bool replace = true;
  std::function<void()> before_rename;
};
[[nodiscard]] Status publish_file(const std::string& path, const std::string& bytes,
                                  const PublishOptions& options);

// Whether `path` names one of publish_file's temporary files: the target's
// name followed by ".tmp.<pid>.<n>.<random>".
[[nodiscard]] bool is_publish_temporary(const std::filesystem::path& path);

// Reads a whole file.
[[nodiscard]] Result<std::string> read_file(const std::string& path);

}  // namespace convjit
