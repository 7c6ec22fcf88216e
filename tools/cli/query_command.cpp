#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli_status.hpp"
#include "command.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/onednn/onednn_backend.hpp"
#include "dispatcher/backends/tuned/tuned_library_backend.hpp"
#include "dispatcher/descriptor/descriptor_json.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/rules/call_rules.hpp"
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

// What the rules in force say about the op on one device: each matching
// rule as the log shows it and, on a CUDA device whose architecture is
// known (a GPU, or CONVJIT_ARCH), the JIT's variants with the rule denying
// each, and the variant the JIT would build first.
struct RulesView {
  std::vector<std::string> notes;
  std::string arch;
  std::vector<std::pair<std::string, std::string>> jit_variants;  // id, denying rule
  std::string jit_choice;
};

RulesView rules_view(const OpDescriptor& d, const convjit_device_t& device) {
  auto rules = rules::CallRules::for_call(d, device);
  if (!rules.is_ok()) throw UsageError(rules.status().message());
  RulesView view;
  const rules::CallRules* r = rules.value() ? &*rules.value() : nullptr;
  if (r != nullptr) view.notes = r->notes;
  if (device.kind != CONVJIT_DEVICE_CUDA || d.symbolic_batch) return view;
  view.arch = (r ? r->facts : rules::call_facts(d, device)).arch;
  if (view.arch.empty() || !jit_supports(d).is_ok() || !jit_supports_arch(d, view.arch).is_ok())
    return view;
  for (const std::string& id : jit_variants(d, variant_context(view.arch))) {
    const rules::Rule* denier = r ? r->denier("jit", id) : nullptr;  // the variant, or all
    view.jit_variants.emplace_back(id, denier ? denier->where() : "");
    if (!denier && view.jit_choice.empty()) view.jit_choice = id;
  }
  return view;
}

nlohmann::json rules_json(const RulesView& v) {
  nlohmann::json j = {{"rules", v.notes}};
  if (v.arch.empty()) return j;
  j["arch"] = v.arch;
  j["jit_variants"] = nlohmann::json::array();
  for (const auto& [id, denier] : v.jit_variants)
    j["jit_variants"].push_back({{"id", id}, {"denied_by", denier}});
  j["jit_choice"] = v.jit_choice;
  return j;
}

void print_rules(const char* device, const RulesView& v) {
  for (const std::string& note : v.notes) fmt::print("{:<10}{}: {}\n", "rules", device, note);
  if (v.jit_variants.empty()) return;
  std::vector<std::string> items;
  for (const auto& [id, denier] : v.jit_variants)
    items.push_back(denier.empty() ? id : fmt::format("{} (denied by rule {})", id, denier));
  fmt::print("{:<10}{} {}: {}\n", "jit", device, v.arch, fmt::join(items, ", "));
  fmt::print("{:<10}{} {}: {}\n", "jit", device, v.arch,
             v.jit_choice.empty() ? "no variant left" : "builds " + v.jit_choice);
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
        "  CONVJIT_CACHE_PATH=/opt/kernels convjit query --name <descriptor> --load\n"
        "  CONVJIT_RULES=my_rules.json CONVJIT_ARCH=sm_80 convjit query --name <descriptor>");
    problem_ = std::make_unique<ProblemInput>(*command_);
  }

  [[nodiscard]] const std::string& name() const override { return command_->get_name(); }
  [[nodiscard]] bool selected() const override { return command_->parsed(); }
  [[nodiscard]] int run() const override {
    const OpDescriptor desc = problem_->descriptor();
    const auto settings = SettingsStore::instance().snapshot();
    std::vector<ProbeStep> probes;
    const std::string result = resolve(desc, *settings, probes);
    const RulesView host = rules_view(desc, {CONVJIT_DEVICE_HOST, 0});
    const RulesView cuda = rules_view(desc, {CONVJIT_DEVICE_CUDA, 0});
    if (json_) {
      nlohmann::json j = descriptor_json(desc);
      j["cache_path"] = settings->cache_path.value;
      j["policy"] = policy_name(settings->policy.value);
      j["device"] = "host";
      j["probes"] = nlohmann::json::array();
      for (const ProbeStep& step : probes)
        j["probes"].push_back({{"path", step.candidate.path}, {"outcome", step.outcome}});
      j["result"] = result;
      j["host"] = rules_json(host);
      j["cuda"] = rules_json(cuda);
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
    print_rules("host", host);
    print_rules("cuda", cuda);
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
