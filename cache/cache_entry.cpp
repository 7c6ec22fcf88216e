#include "cache/cache_entry.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string_view>

namespace convjit {

namespace {

constexpr char kMagic[8] = {'C', 'O', 'N', 'V', 'J', 'I', 'T', 'C'};

// Header: magic, format, preimage/metadata/payload lengths, checksum.
struct Header {
  char magic[8];
  std::uint32_t format;
  std::uint32_t preimage_bytes;
  std::uint32_t metadata_bytes;
  std::uint32_t reserved;
  std::uint64_t payload_bytes;
  std::uint64_t checksum;  // XXH3-64 over everything after the header
};
static_assert(sizeof(Header) == 40);

std::uint64_t checksum(const std::string& body) { return XXH3_64bits(body.data(), body.size()); }

struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

Status errno_status(const std::string& what, const std::string& path) {
  return Status::not_available(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

bool write_all(int fd, const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

constexpr std::string_view kTemporaryMark = ".tmp.";

std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return fmt::format("{}{}.{}.{:x}", kTemporaryMark, ::getpid(), counter.fetch_add(1), rng());
}

}  // namespace

std::string encode_cache_entry(const CacheEntry& e) {
  const std::string body =
      e.preimage + e.metadata + std::string(e.payload.begin(), e.payload.end());
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.format = kCacheEntryFormat;
  h.preimage_bytes = static_cast<std::uint32_t>(e.preimage.size());
  h.metadata_bytes = static_cast<std::uint32_t>(e.metadata.size());
  h.payload_bytes = e.payload.size();
  h.checksum = checksum(body);
  return std::string(reinterpret_cast<const char*>(&h), sizeof h) + body;
}

Result<CacheEntry> decode_cache_entry(const std::string& bytes) {
  if (bytes.size() < sizeof(Header))
    return Status::invalid(
        fmt::format("truncated: {} bytes, shorter than the header", bytes.size()));
  Header h;
  std::memcpy(&h, bytes.data(), sizeof h);
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0)
    return Status::invalid("not a convjit cache entry (bad magic)");
  if (h.format != kCacheEntryFormat)
    return Status::invalid(
        fmt::format("entry format {}, this convjit reads {}", h.format, kCacheEntryFormat));
  const std::uint64_t body = std::uint64_t{h.preimage_bytes} + h.metadata_bytes + h.payload_bytes;
  if (bytes.size() - sizeof h != body)
    return Status::invalid(fmt::format("truncated or padded: {} body bytes, header says {}",
                                       bytes.size() - sizeof h, body));
  const std::string rest = bytes.substr(sizeof h);
  if (checksum(rest) != h.checksum) return Status::invalid("checksum mismatch");
  CacheEntry e;
  e.preimage = rest.substr(0, h.preimage_bytes);
  e.metadata = rest.substr(h.preimage_bytes, h.metadata_bytes);
  const auto payload = rest.begin() + h.preimage_bytes + h.metadata_bytes;
  e.payload.assign(payload, rest.end());
  return e;
}

Status publish_file(const std::string& path, const std::string& bytes,
                    const std::function<void()>& before_rename) {
  return publish_file(path, bytes, PublishOptions{0600, true, before_rename});
}

Status publish_file(const std::string& path, const std::string& bytes,
                    const PublishOptions& options) {
  const std::string temporary = path + unique_suffix();
  {
    FileDescriptor f{::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                            static_cast<mode_t>(options.mode))};
    if (f.fd < 0) return errno_status("cannot create", temporary);
    if (::fchmod(f.fd, static_cast<mode_t>(options.mode)) != 0 || !write_all(f.fd, bytes) ||
        ::fsync(f.fd) != 0) {
      const Status s = errno_status("cannot write", temporary);
      ::unlink(temporary.c_str());
      return s;
    }
  }
  if (options.before_rename) options.before_rename();
  // link(2) fails on an existing target where rename(2) would replace it.
  const bool placed = options.replace ? ::rename(temporary.c_str(), path.c_str()) == 0
                                      : ::link(temporary.c_str(), path.c_str()) == 0;
  if (!placed) {
    const Status s = !options.replace && errno == EEXIST
                         ? Status::invalid(fmt::format("{} exists", path))
                         : errno_status("cannot move into place", path);
    ::unlink(temporary.c_str());
    return s;
  }
  if (!options.replace) ::unlink(temporary.c_str());
  const std::string directory = std::filesystem::path(path).parent_path().string();
  FileDescriptor dir{::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (dir.fd >= 0) ::fsync(dir.fd);  // make the rename durable
  return Status::ok();
}

bool is_publish_temporary(const std::filesystem::path& path) {
  return path.filename().string().find(kTemporaryMark) != std::string::npos;
}

Result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::not_available(fmt::format("cannot read {}", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace convjit
