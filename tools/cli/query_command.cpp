#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli_status.hpp"
#include "command.hpp"
#include "dispatcher/backends/onednn/onednn_backend.hpp"
#include "dispatcher/backends/tuned/tuned_library_backend.hpp"
#include "dispatcher/descriptor/descriptor_json.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/settings.hpp"
#include "problem_flags.hpp"

namespace convjit::cli {

namespace {

std::string search_list(const std::vector<std::string>& dirs) {
  return dirs.empty() ? "(none)" : fmt::format("{}", fmt::join(dirs, ":"));
}

template <class T>
std::string origin(const Setting<T>& s) {
  if (s.source == SettingSource::default_value) return "default";
  return fmt::format("{} {}", source_name(s.source), s.origin);
}

// What serves the op on the host when no tuned library does: oneDNN where
// it loads and accepts the op (a dry run: nothing is built), else the
// reference, with oneDNN's reason.
std::string fallback(const OpDescriptor& d) {
  if (d.symbolic_batch) return "none: a symbolic-batch descriptor only names libraries";
  constexpr const char* kGpu = "; the JIT and then cuDNN serve CUDA devices";
  const Status onednn = OnednnBackend().check_support(d, {CONVJIT_DEVICE_HOST, 0});
  if (onednn.is_ok()) return std::string("onednn (host)") + kGpu;
  return fmt::format("reference (host), as onednn declines: {}{}", onednn.message(), kGpu);
}

class QueryCommand final : public Command {
 public:
  explicit QueryCommand(CLI::App& app) {
    command_ = app.add_subcommand(
        "query", "Show, as a dry run, where an operation would resolve and every file probed");
    command_->add_flag("--json", json_, "machine-readable output");
    command_->add_flag("--load", load_,
                       "also load each candidate library and check its ABI (runs its init code)");
    command_->footer(
        "Examples:\n"
        "  convjit query conv --x 32,3,224,224 --w 64,3,7,7 --stride 2,2 --pad 3,3\n"
        "  CONVJIT_CACHE_PATH=/opt/kernels convjit query --name <descriptor> --load");
    problem_ = std::make_unique<ProblemInput>(*command_);
  }

  [[nodiscard]] const std::string& name() const override { return command_->get_name(); }
  [[nodiscard]] bool selected() const override { return command_->parsed(); }
  [[nodiscard]] int run() const override {
    const OpDescriptor desc = problem_->descriptor();
    const auto settings = SettingsStore::instance().snapshot();
    std::vector<ProbeStep> probes;
    const std::string result = resolve(desc, *settings, probes);
    if (json_) {
      nlohmann::json j = descriptor_json(desc);
      j["cache_path"] = settings->cache_path.value;
      j["policy"] = policy_name(settings->policy.value);
      j["device"] = "host";
      j["probes"] = nlohmann::json::array();
      for (const ProbeStep& step : probes)
        j["probes"].push_back({{"path", step.candidate.path}, {"outcome", step.outcome}});
      j["result"] = result;
      fmt::print("{}\n", j.dump(2));
      return kExitOk;
    }
    fmt::print("{}\n", descriptor_name(desc));
    if (!desc.symbolic_batch)
      fmt::print("{:<10}{}\n", "symbolic", descriptor_name(with_symbolic_batch(desc)));
    fmt::print("{:<10}{}  [{}]\n", "cache", search_list(settings->cache_path.value),
               origin(settings->cache_path));
    fmt::print("{:<10}{}  [{}]\n", "policy", policy_name(settings->policy.value),
               origin(settings->policy));
    fmt::print("{:<10}host\n", "device");
    for (const ProbeStep& step : probes)
      fmt::print("{:<10}{}: {}\n", "probe", step.candidate.path, step.outcome);
    fmt::print("{:<10}{}\n", "result", result);
    return kExitOk;
  }

 private:
  // Where the call would resolve; `probes` receives every file looked at.
  std::string resolve(const OpDescriptor& desc, const Settings& settings,
                      std::vector<ProbeStep>& probes) const {
    const Policy policy = settings.policy.value;
    if (policy != Policy::automatic)
      return fmt::format("tuned libraries are not consulted under policy {}", policy_name(policy));
    if (desc.symbolic_batch) return fallback(desc);
    ProbeReport report =
        probe_tuned_libraries(desc, {CONVJIT_DEVICE_HOST, 0}, settings.cache_path.value,
                              load_ ? ProbeMode::load : ProbeMode::dry_run);
    probes = std::move(report.steps);
    const bool hit = !probes.empty() && (probes.back().outcome == "would load" ||
                                         probes.back().outcome.starts_with("loaded"));
    return hit ? "tuned-library: " + probes.back().candidate.path : fallback(desc);
  }

  CLI::App* command_ = nullptr;
  std::unique_ptr<ProblemInput> problem_;
  bool load_ = false;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_query_command(CLI::App& app) {
  return std::make_unique<QueryCommand>(app);
}

}  // namespace convjit::cli
