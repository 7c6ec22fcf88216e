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
#include "dispatcher/backends/cudnn/cudnn_library.hpp"
#include "dispatcher/backends/jit/embedded_templates.hpp"
#include "dispatcher/backends/jit/nvrtc_library.hpp"
#include "dispatcher/backends/onednn/onednn_library.hpp"
#include "dispatcher/cuda/cuda_driver.hpp"
#include "dispatcher/settings.hpp"
#include "version.hpp"

namespace convjit::cli {

namespace {

// A library convjit loads at run time: the file and the place that found
// it, or why none was loaded and every place looked at.
nlohmann::json runtime_library(const SearchedLibrary& library) {
  const LoadedLibrary& origin = library.origin();
  if (!library.available().is_ok())
    return {{"loaded", false},
            {"error", library.available().message()},
            {"looked", origin.looked},
            {"remedy", origin.remedy}};
  return {{"loaded", true},
          {"version", library.version()},
          {"path", origin.path},
          {"found_by", origin.where},
          {"looked", origin.looked}};
}

// oneDNN, with the instruction set its kernels use on this CPU.
nlohmann::json onednn_library() {
  nlohmann::json j = runtime_library(OnednnLibrary::instance());
  if (j["loaded"].get<bool>()) j["cpu_isa"] = OnednnLibrary::instance().cpu_isa();
  return j;
}

void print_runtime_library(const std::string& label, const nlohmann::json& library,
                           const std::string& prefix = "") {
  if (library["loaded"].get<bool>()) {
    fmt::print("{:<14} {}{} from {}\n{:<14} found by {}\n", label, prefix,
               library["version"].get<std::string>(), library["path"].get<std::string>(), "",
               library["found_by"].get<std::string>());
    return;
  }
  fmt::print("{:<14} {}not available; looked in:\n", label, prefix);
  for (const auto& place : library["looked"])
    fmt::print("{:<14}   {}\n", "", place.get<std::string>());
  fmt::print("{:<14} to fix: {}\n", "", library["remedy"].get<std::string>());
}

nlohmann::json directory_report(const std::string& dir) {
  nlohmann::json j{{"path", dir}};
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    j["exists"] = false;
    return j;
  }
  j["exists"] = true;
  j["is_directory"] = S_ISDIR(st.st_mode);
  j["mode"] = fmt::format("{:04o}", st.st_mode & 07777);
  j["owner_uid"] = st.st_uid;
  j["writable"] = S_ISDIR(st.st_mode) && ::access(dir.c_str(), W_OK | X_OK) == 0;
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
      {"nvrtc", runtime_library(NvrtcLibrary::instance())},
      {"cudnn_headers", kCudnnHeaderVersion},
      {"cudnn", runtime_library(CudnnLibrary::instance())},
      {"onednn", onednn_library()},
      {"templates_sha256", std::string(embedded_templates_hash())},
      {"cache_directories", dirs},
      {"local_cache_directory", settings->local_cache_path.value.empty()
                                    ? nlohmann::json(nullptr)
                                    : directory_report(settings->local_cache_path.value)},
      {"settings",
       {{"cache_path", setting(settings->cache_path, settings->cache_path.value)},
        {"local_cache_path", setting(settings->local_cache_path, settings->local_cache_path.value)},
        {"verbose", setting(settings->verbose, settings->verbose.value)},
        {"log_file", setting(settings->log_file, settings->log_file.value)},
        {"record_file", setting(settings->record_file, settings->record_file.value)},
        {"policy", setting(settings->policy, std::string(policy_name(settings->policy.value)))},
        {"arch", setting(settings->arch, settings->arch.value)},
        {"allow_tf32", setting(settings->allow_tf32, settings->allow_tf32.value)},
        {"cudnn_workspace_limit_mib",
         setting(settings->cudnn_workspace_limit_mib, settings->cudnn_workspace_limit_mib.value)},
        {"wgmma_tma_store", setting(settings->wgmma_tma_store, settings->wgmma_tma_store.value)},
        {"wgmma_stream_k", setting(settings->wgmma_stream_k, settings->wgmma_stream_k.value)}}},
  };
}

void print_text(const nlohmann::json& r) {
  fmt::print("convjit        {}\n", r["convjit"].get<std::string>());
  fmt::print("CUDA driver    {}\n", r["cuda_driver"].get<std::string>());
  for (const auto& g : r["gpus"])
    fmt::print("GPU {}          {}, {}\n", g["ordinal"].get<int>(), g["name"].get<std::string>(),
               g["arch"].get<std::string>());
  print_runtime_library("NVRTC", r["nvrtc"]);
  print_runtime_library("cuDNN", r["cudnn"],
                        fmt::format("headers {}, runtime ", r["cudnn_headers"].get<std::string>()));
  print_runtime_library("oneDNN", r["onednn"]);
  if (r["onednn"]["loaded"].get<bool>())
    fmt::print("{:<14} CPU ISA {} (ONEDNN_MAX_CPU_ISA caps it)\n", "",
               r["onednn"]["cpu_isa"].get<std::string>());
  fmt::print("templates      sha256 {}\n", r["templates_sha256"].get<std::string>().substr(0, 16));
  for (const auto& d : r["cache_directories"]) {
    if (!d["exists"].get<bool>()) {
      fmt::print("cache dir      {}: does not exist yet (created 0700 on first write)\n",
                 d["path"].get<std::string>());
      continue;
    }
    if (!d["is_directory"].get<bool>()) {
      fmt::print("cache dir      {}: not a directory; remove the file or change "
                 "CONVJIT_CACHE_PATH\n",
                 d["path"].get<std::string>());
      continue;
    }
    fmt::print(
        "cache dir      {}: mode {}, {}, {:.1f} GiB free{}\n", d["path"].get<std::string>(),
        d["mode"].get<std::string>(), d["writable"].get<bool>() ? "writable" : "read-only",
        static_cast<double>(d.value("free_bytes", std::uint64_t{0})) / (1u << 30),
        d["shared_write"].get<bool>() ? "; WARNING: writable by other users, run chmod go-w" : "");
  }
  if (r["local_cache_directory"].is_null())
    fmt::print("local tier     none\n");
  else
    fmt::print("local tier     {}{}\n", r["local_cache_directory"]["path"].get<std::string>(),
               r["local_cache_directory"]["exists"].get<bool>() ? ""
                                                                 : ": created 0700 on first use");
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
