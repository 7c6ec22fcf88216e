#include "dispatcher/observe/recorder.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <span>

#include "dispatcher/descriptor/descriptor_json.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/observe/warnings.hpp"
#include "dispatcher/settings.hpp"

namespace convjit {

namespace {

// Closes a file descriptor (and so drops its flock) on scope exit.
struct FileHandle {
  int fd;
  ~FileHandle() {
    if (fd >= 0) ::close(fd);
  }
};

bool write_all(int fd, const std::string& text) {
  // O_APPEND makes each write() land at the end; the flock keeps lines whole.
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

}  // namespace

Recorder& Recorder::instance() {
  static Recorder* recorder = new Recorder;  // used from any thread until exit
  return *recorder;
}

std::string Recorder::json_line(const OpDescriptor& d, std::string_view backend) {
  nlohmann::json j = descriptor_json(d);
  j["backend"] = backend;
  return j.dump();
}

void Recorder::scan_new_lines(int fd) {
  const off_t end = ::lseek(fd, 0, SEEK_END);
  if (end <= scanned_bytes_) return;
  std::string text(static_cast<std::size_t>(end - scanned_bytes_), '\0');
  const ssize_t n = ::pread(fd, text.data(), text.size(), scanned_bytes_);
  if (n <= 0) return;
  text.resize(static_cast<std::size_t>(n));
  std::size_t start = 0;
  for (std::size_t newline; (newline = text.find('\n', start)) != std::string::npos;
       start = newline + 1) {
    const auto line =
        nlohmann::json::parse(text.begin() + static_cast<std::ptrdiff_t>(start),
                              text.begin() + static_cast<std::ptrdiff_t>(newline), nullptr, false);
    if (line.is_object() && line.contains("name") && line["name"].is_string())
      seen_.insert(line["name"].get<std::string>());
  }
  scanned_bytes_ += static_cast<long long>(start);  // an unterminated tail is read again next time
}

void Recorder::record(const OpDescriptor& desc, std::string_view backend) {
  const auto settings = SettingsStore::instance().snapshot();
  const std::string& file = settings->record_file.value;
  if (file.empty()) return;
  const std::string name = descriptor_name(desc);
  std::lock_guard lock(mutex_);
  if (file != file_) file_ = file, seen_.clear(), scanned_bytes_ = 0;
  if (seen_.count(name)) return;
  FileHandle handle{::open(file.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644)};
  if (handle.fd < 0 || ::flock(handle.fd, LOCK_EX) != 0) {
    warn_once(fmt::format("cannot record to {}={}: {}; fix the path or its permissions",
                          settings->record_file.origin, file, std::strerror(errno)));
    return;
  }
  scan_new_lines(handle.fd);
  if (seen_.count(name)) return;
  if (!write_all(handle.fd, json_line(desc, backend) + "\n")) {
    warn_once(fmt::format("cannot append to the record file {}: {}", file, std::strerror(errno)));
    return;
  }
  seen_.insert(name);
  scan_new_lines(handle.fd);  // our own line, and any that raced in before the lock
}

}  // namespace convjit
