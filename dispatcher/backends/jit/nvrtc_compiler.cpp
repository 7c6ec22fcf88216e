#include "dispatcher/backends/jit/nvrtc_compiler.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>

#include "dispatcher/backends/jit/embedded_templates.hpp"
#include "dispatcher/backends/jit/nvrtc_library.hpp"
#include "dispatcher/cuda/gpu_arch.hpp"

namespace convjit {

namespace {

// RAII owner of an nvrtcProgram.
class NvrtcProgram {
 public:
  NvrtcProgram(const NvrtcApi& api, const KernelSource& source) : api_(api) {
    const auto templates = embedded_templates();
    std::vector<const char*> texts, names;
    for (const auto& t : templates) texts.push_back(t.text), names.push_back(t.name);
    // The program must not share a name with the template it includes, and
    // is named like a file at kernel_templates/'s root, where the templates'
    // includes ("common/grid.cuh") start.
    std::string name = "generated_" + source.template_name + ".cu";
    std::replace(name.begin(), name.end(), '/', '_');
    result_ = api_.create_program(&program_, source.source.c_str(), name.c_str(),
                                  static_cast<int>(templates.size()), texts.data(), names.data());
  }
  ~NvrtcProgram() {
    if (result_ == NVRTC_SUCCESS) api_.destroy_program(&program_);
  }
  NvrtcProgram(const NvrtcProgram&) = delete;
  NvrtcProgram& operator=(const NvrtcProgram&) = delete;

  [[nodiscard]] nvrtcResult created() const { return result_; }
  [[nodiscard]] nvrtcProgram get() const { return program_; }

  [[nodiscard]] std::string log() const {
    std::size_t size = 0;
    if (api_.get_program_log_size(program_, &size) != NVRTC_SUCCESS || size == 0) return {};
    std::string text(size, '\0');
    if (api_.get_program_log(program_, text.data()) != NVRTC_SUCCESS) return {};
    text.resize(size - 1);  // drop the terminating NUL
    return text;
  }

  [[nodiscard]] std::string ptx() const {
    std::size_t size = 0;
    if (api_.get_ptx_size(program_, &size) != NVRTC_SUCCESS || size == 0) return {};
    std::string text(size, '\0');
    if (api_.get_ptx(program_, text.data()) != NVRTC_SUCCESS) return {};
    text.resize(size - 1);
    return text;
  }

  [[nodiscard]] std::vector<char> cubin() const {
    std::size_t size = 0;
    if (api_.get_cubin_size(program_, &size) != NVRTC_SUCCESS) return {};
    std::vector<char> bytes(size);
    if (api_.get_cubin(program_, bytes.data()) != NVRTC_SUCCESS) return {};
    return bytes;
  }

 private:
  const NvrtcApi& api_;
  nvrtcProgram program_{};
  nvrtcResult result_ = NVRTC_ERROR_INVALID_PROGRAM;
};

std::string dump_failed_source(const KernelSource& source, const std::string& dir) {
  if (dir.empty()) return "(not saved)";
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  const auto path =
      std::filesystem::path(dir) /
      fmt::format("failed-{:016x}.cu", XXH3_64bits(source.source.data(), source.source.size()));
  std::ofstream(path) << source.source;
  return path.string();
}

}  // namespace

std::string nvrtc_version() {
  const NvrtcLibrary& nvrtc = NvrtcLibrary::instance();
  return nvrtc.available().is_ok() ? nvrtc.version() : "unavailable";
}

std::vector<std::string> nvrtc_options(const std::string& arch) {
  return {"--gpu-architecture=" + arch, "--std=c++17", "--fmad=true", "-Xptxas=-v", "-pch"};
}

PtxasStats parse_ptxas_stats(const std::string& log) {
  PtxasStats stats;
  static const std::regex registers(R"(Used (\d+) registers)");
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), registers);
       it != std::sregex_iterator(); ++it)
    stats.max_registers = std::max(stats.max_registers, std::stoi((*it)[1]));
  static const std::regex shared(R"((\d+) bytes smem)");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), shared); it != std::sregex_iterator();
       ++it)
    stats.shared_bytes = std::max(stats.shared_bytes, std::stoll((*it)[1]));
  for (auto it = std::sregex_iterator(log.begin(), log.end(), frame); it != std::sregex_iterator();
       ++it) {
    stats.stack_bytes += std::stoll((*it)[1]);
    stats.spill_stores += std::stoll((*it)[2]);
    stats.spill_loads += std::stoll((*it)[3]);
  }
  return stats;
}

std::string target_arch(const KernelSource& source, const std::string& device_arch) {
  return source.arch_specific ? arch_specific(device_arch) : device_arch;
}

Result<CompiledModule> compile_kernel(const KernelSource& source, const std::string& device_arch,
                                      const std::string& failed_source_dir,
                                      const std::string& pch_dir) {
  const std::string arch = target_arch(source, device_arch);
  const auto start = std::chrono::steady_clock::now();
  const NvrtcLibrary& nvrtc = NvrtcLibrary::instance();
  if (!nvrtc.available().is_ok()) return nvrtc.available();
  NvrtcProgram program(nvrtc.api(), source);
  if (Status s = nvrtc.check(program.created(), "nvrtcCreateProgram"); !s.is_ok())
    return Status::not_available(s.message());
  CompiledModule out;
  out.options = nvrtc_options(arch);
  std::vector<const char*> options;
  for (const auto& o : out.options) options.push_back(o.c_str());
  const std::string pch_option = "--pch-dir=" + pch_dir;
  if (!pch_dir.empty()) options.push_back(pch_option.c_str());
  const nvrtcResult compiled =
      nvrtc.api().compile_program(program.get(), static_cast<int>(options.size()), options.data());
  out.log = program.log();
  if (compiled != NVRTC_SUCCESS)
    return Status(CONVJIT_STATUS_EXECUTION_FAILED,
                  fmt::format("NVRTC could not compile {} for {} ({}); source: {}; log:\n{}",
                              source.template_name, arch, nvrtc.api().get_error_string(compiled),
                              dump_failed_source(source, failed_source_dir), out.log));
  out.cubin = program.cubin();
  out.ptx = program.ptx();
  if (out.cubin.empty()) return Status(CONVJIT_STATUS_EXECUTION_FAILED, "NVRTC produced no CUBIN");
  out.stats = parse_ptxas_stats(out.log);
  out.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace convjit
