#include "analysis/disassembler.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "dispatcher/libraries/library_search.hpp"

extern char** environ;

namespace convjit::analysis {

namespace {

LibrarySpec nvdisasm_spec() {
  LibrarySpec spec{"nvdisasm", "CONVJIT_NVDISASM", {"nvdisasm"},
                   "nvdisasm (pip install nvidia-cuda-nvdisasm, or the CUDA toolkit)"};
  spec.executable = true;
#ifdef CONVJIT_PYTHON_ENV_DIR
  spec.python_environments = {CONVJIT_PYTHON_ENV_DIR};
#endif
  return spec;
}

// The CUBIN in a private temporary file, removed with this object: nvdisasm
// reads only files.
class TemporaryCubin {
 public:
  explicit TemporaryCubin(const std::vector<char>& cubin) {
    const char* dir = std::getenv("TMPDIR");
    path_ = fmt::format("{}/convjit-analyze-XXXXXX", dir && *dir ? dir : "/tmp");
    const int fd = ::mkstemp(path_.data());
    if (fd < 0) {
      error_ = fmt::format("cannot create a temporary file ({}): {}", path_, std::strerror(errno));
      path_.clear();
      return;
    }
    std::size_t written = 0;
    while (written < cubin.size()) {
      const ssize_t n = ::write(fd, cubin.data() + written, cubin.size() - written);
      if (n <= 0) break;
      written += static_cast<std::size_t>(n);
    }
    ::close(fd);
    if (written != cubin.size()) error_ = fmt::format("cannot write {}", path_);
  }
  ~TemporaryCubin() {
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  TemporaryCubin(const TemporaryCubin&) = delete;
  TemporaryCubin& operator=(const TemporaryCubin&) = delete;
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] const std::string& error() const { return error_; }

 private:
  std::string path_, error_;
};

// Runs `argv` with stdout and stderr into one pipe; the output and the exit
// status (-1 when it did not exit normally).
std::pair<int, std::string> run_captured(const std::vector<std::string>& args) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return {-1, "pipe failed"};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDERR_FILENO);
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = ::posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(fds[1]);
  std::string output;
  std::array<char, 1 << 16> buffer;
  for (ssize_t n; (n = ::read(fds[0], buffer.data(), buffer.size())) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    output.append(buffer.data(), static_cast<std::size_t>(n));
  }
  ::close(fds[0]);
  if (spawned != 0) return {-1, fmt::format("cannot run {}: {}", args[0], std::strerror(spawned))};
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, std::move(output)};
}

bool is_executable(const std::string& path) {
  std::error_code error;
  return std::filesystem::is_regular_file(path, error) && ::access(path.c_str(), X_OK) == 0;
}

}  // namespace

Result<Disassembler> find_disassembler(EnvLookup lookup) {
  const LibrarySpec spec = nvdisasm_spec();
  std::string looked;
  for (const SearchPlace& place : library_search_places(spec, lookup)) {
    for (const std::string& file : place.files)
      if (is_executable(file)) return Disassembler{file, place.where};
    looked += fmt::format("{}{}: {}", looked.empty() ? "" : "; ", place.where,
                          place.files.empty() ? "none" : "not executable");
  }
  return Status::not_available(fmt::format("no {} found ({}); install {} or set {}", spec.label,
                                           looked, spec.requirement, spec.setting));
}

Result<std::string> disassemble(const Disassembler& tool, const std::vector<char>& cubin) {
  const TemporaryCubin file(cubin);
  if (!file.error().empty()) return Status(CONVJIT_STATUS_INTERNAL_ERROR, file.error());
  auto [code, output] = run_captured({tool.path, "-c", file.path()});
  if (code != 0)
    return Status(CONVJIT_STATUS_INTERNAL_ERROR,
                  fmt::format("{} failed (exit {}): {}", tool.path, code, output));
  return output;
}

}  // namespace convjit::analysis
