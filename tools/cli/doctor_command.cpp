// `convjit doctor`: what this machine offers convjit and every setting in
// effect, with where it came from.
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli_status.hpp"
#include "command.hpp"
#include "cuda/cuda_driver.hpp"
#include "cudnn/cudnn_library.hpp"
#include "jit/embedded_templates.hpp"
#include "jit/nvrtc_compiler.hpp"
#include "settings.hpp"
#include "version.hpp"

namespace convjit::cli {

namespace {

// cuDNN is optional at run time: its version, or why it is not available.
std::string cudnn_runtime() {
  const CudnnLibrary& cudnn = CudnnLibrary::instance();
  return cudnn.available().is_ok() ? cudnn.version() : cudnn.available().message();
}

nlohmann::json directory_report(const std::string& dir) {
  nlohmann::json j{{"path", dir}};
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    j["exists"] = false;
    return j;
  }
  j["exists"] = true;
  j["mode"] = fmt::format("{:04o}", st.st_mode & 07777);
  j["owner_uid"] = st.st_uid;
  j["writable"] = ::access(dir.c_str(), W_OK | X_OK) == 0;
  j["shared_write"] = (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
  struct statvfs fs {};
  if (::statvfs(dir.c_str(), &fs) == 0)
    j["free_bytes"] = static_cast<std::uint64_t>(fs.f_bavail) * fs.f_frsize;
  return j;
}

template <class T>
nlohmann::json setting(const Setting<T>& s, nlohmann::json value) {
  return {{"value", std::move(value)},
          {"source", std::string(source_name(s.source))},
          {"origin", s.origin}};
}

nlohmann::json gather() {
  const auto settings = SettingsStore::instance().snapshot();
  const CudaDriver& driver = CudaDriver::instance();
  nlohmann::json gpus = nlohmann::json::array();
  if (driver.available().is_ok()) {
    int count = 0;
    (void)driver.api().device_get_count(&count);
    for (int i = 0; i < count; ++i)
      gpus.push_back({{"ordinal", i}, {"name", driver.name_of(i)}, {"arch", driver.arch_of(i)}});
  }
  nlohmann::json dirs = nlohmann::json::array();
  for (const auto& dir : settings->cache_path.value) dirs.push_back(directory_report(dir));
  return {
      {"convjit", kVersionString},
      {"cuda_driver", driver.available().is_ok() ? "loaded" : driver.available().message()},
      {"gpus", gpus},
      {"nvrtc", nvrtc_version()},
      {"cudnn_headers", kCudnnHeaderVersion},
      {"cudnn_runtime", cudnn_runtime()},
      {"templates_sha256", std::string(embedded_templates_hash())},
      {"cache_directories", dirs},
      {"settings",
       {{"cache_path", setting(settings->cache_path, settings->cache_path.value)},
        {"verbose", setting(settings->verbose, settings->verbose.value)},
        {"log_file", setting(settings->log_file, settings->log_file.value)},
        {"record_file", setting(settings->record_file, settings->record_file.value)},
        {"policy", setting(settings->policy, std::string(policy_name(settings->policy.value)))},
        {"arch", setting(settings->arch, settings->arch.value)},
        {"allow_tf32", setting(settings->allow_tf32, settings->allow_tf32.value)}}},
  };
}

void print_text(const nlohmann::json& r) {
  fmt::print("convjit        {}\n", r["convjit"].get<std::string>());
  fmt::print("CUDA driver    {}\n", r["cuda_driver"].get<std::string>());
  for (const auto& g : r["gpus"])
    fmt::print("GPU {}          {}, {}\n", g["ordinal"].get<int>(), g["name"].get<std::string>(),
               g["arch"].get<std::string>());
  fmt::print("NVRTC          {}\n", r["nvrtc"].get<std::string>());
  fmt::print("cuDNN          headers {}, runtime {}\n", r["cudnn_headers"].get<std::string>(),
             r["cudnn_runtime"].get<std::string>());
  fmt::print("templates      sha256 {}\n", r["templates_sha256"].get<std::string>().substr(0, 16));
  for (const auto& d : r["cache_directories"]) {
    if (!d["exists"].get<bool>()) {
      fmt::print("cache dir      {}: does not exist yet (created 0700 on first write)\n",
                 d["path"].get<std::string>());
      continue;
    }
    fmt::print(
        "cache dir      {}: mode {}, {}, {:.1f} GiB free{}\n", d["path"].get<std::string>(),
        d["mode"].get<std::string>(), d["writable"].get<bool>() ? "writable" : "read-only",
        static_cast<double>(d.value("free_bytes", std::uint64_t{0})) / (1u << 30),
        d["shared_write"].get<bool>() ? "; WARNING: writable by other users, run chmod go-w" : "");
  }
  for (const auto& [name, s] : r["settings"].items()) {
    const std::string source = s["source"].get<std::string>(),
                      origin = s["origin"].get<std::string>();
    fmt::print("setting        {:<12} = {:<40} [{}]\n", name, s["value"].dump(),
               source == "default" ? source : source + " " + origin);
  }
}

class DoctorCommand final : public Command {
 public:
  explicit DoctorCommand(CLI::App& app) {
    command_ = app.add_subcommand(
        "doctor", "Report the driver, GPUs, NVRTC, cuDNN, cache directories and settings");
    command_->add_flag("--json", json_, "machine-readable output");
    command_->footer("Examples:\n  convjit doctor\n  CONVJIT_VERBOSE=1 convjit doctor --json");
  }
  [[nodiscard]] const std::string& name() const override { return command_->get_name(); }
  [[nodiscard]] bool selected() const override { return command_->parsed(); }
  [[nodiscard]] int run() const override {
    const nlohmann::json report = gather();
    if (json_) {
      fmt::print("{}\n", report.dump(2));
    } else {
      print_text(report);
    }
    return kExitOk;
  }

 private:
  CLI::App* command_ = nullptr;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_doctor_command(CLI::App& app) {
  return std::make_unique<DoctorCommand>(app);
}

}  // namespace convjit::cli
