// `convjit cache ls|stat|verify|gc|clear`: inspect and manage the JIT cache
// in the first writable directory of the cache path.
#include <fmt/chrono.h>
#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

#include "cache/jit_cache.hpp"
#include "cache/tuning_decisions.hpp"
#include "cli_status.hpp"
#include "command.hpp"
#include "dispatcher/settings.hpp"
#include "integer_flags.hpp"

namespace convjit::cli {

namespace {

std::string human_bytes(std::uint64_t bytes) {
  if (bytes >= (1u << 20)) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
  if (bytes >= (1u << 10)) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / (1 << 10));
  return fmt::format("{} B", bytes);
}

nlohmann::json to_json(const CacheFileInfo& f) {
  return {{"path", f.path},           {"bytes", f.bytes},
          {"last_used", f.last_used}, {"descriptor", f.descriptor},
          {"arch", f.arch},           {"valid", f.valid},
          {"problem", f.problem}};
}

class CacheCommand final : public Command {
 public:
  explicit CacheCommand(CLI::App& app) {
    command_ = app.add_subcommand("cache", "Inspect and manage the JIT cache");
    command_->require_subcommand(1);
    ls_ = command_->add_subcommand("ls",
                                   "list entries: descriptor, arch, size, last use (newest first)");
    stat_ = command_->add_subcommand("stat", "summarise the cache");
    verify_ = command_->add_subcommand("verify",
                                       "recompute checksums; move damaged entries to quarantine");
    gc_ = command_->add_subcommand("gc", "evict least recently used entries down to a size bound");
    clear_ = command_->add_subcommand("clear", "remove every entry");
    for (CLI::App* sub : {ls_, stat_, verify_})
      sub->add_flag("--json", json_, "machine-readable output");
    add_integer_flag(*gc_, "--max-bytes", max_bytes_, "size bound in bytes (default 2 GiB)",
                     {.min = 1});
    clear_->add_flag("--yes", yes_, "confirm: remove every entry");
    command_->footer(
        "Examples:\n  convjit cache stat\n  convjit cache ls --json\n  convjit cache gc "
        "--max-bytes 500000000\n"
        "  convjit cache clear --yes");
  }

  [[nodiscard]] const std::string& name() const override { return command_->get_name(); }
  [[nodiscard]] bool selected() const override { return command_->parsed(); }

  [[nodiscard]] int run() const override {
    const auto settings = SettingsStore::instance().snapshot();
    JitCacheOptions options;
    if (max_bytes_ > 0) options.max_bytes = max_bytes_;
    JitCache cache(settings->cache_path.value, options);
    if (cache.writable_directory().empty())
      throw RuntimeError(fmt::format("no writable cache directory in {}; set CONVJIT_CACHE_PATH",
                                     fmt::join(settings->cache_path.value, ":")));
    if (ls_->parsed()) return list(cache);
    if (stat_->parsed()) return summary(cache);
    if (verify_->parsed()) return verify(cache);
    if (gc_->parsed()) {
      const std::uint64_t before = cache.size_bytes();
      cache.enforce_size_bound();
      fmt::print("gc: {} -> {} (bound {})\n", human_bytes(before), human_bytes(cache.size_bytes()),
                 human_bytes(cache.max_bytes()));
      return kExitOk;
    }
    if (!yes_)
      throw UsageError("cache clear removes every entry of " + cache.writable_directory() +
                       "; add --yes");
    fmt::print("cleared {} from {}\n", human_bytes(cache.clear()), cache.writable_directory());
    const std::uint64_t decisions = TuningDecisions(settings->cache_path.value).clear();
    fmt::print("cleared {} tuning decision{}\n", decisions, decisions == 1 ? "" : "s");
    return kExitOk;
  }

 private:
  int list(const JitCache& cache) const {
    const auto files = cache.entries();
    if (json_) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& f : files) out.push_back(to_json(f));
      fmt::print("{}\n", out.dump(2));
      return kExitOk;
    }
    fmt::print("{:<8} {:>10}  {:<19}  {}\n", "arch", "size", "last used", "descriptor");
    for (const auto& f : files)
      fmt::print("{:<8} {:>10}  {:%Y-%m-%d %H:%M:%S}  {}\n", f.valid ? f.arch : "damaged",
                 human_bytes(f.bytes), fmt::localtime(static_cast<std::time_t>(f.last_used)),
                 f.valid ? f.descriptor : f.problem);
    return kExitOk;
  }

  int summary(const JitCache& cache) const {
    const auto files = cache.entries();
    std::map<std::string, int> per_arch;
    int damaged = 0;
    for (const auto& f : files) f.valid ? ++per_arch[f.arch] : ++damaged;
    if (json_) {
      fmt::print("{}\n", nlohmann::json{{"directory", cache.writable_directory()},
                                        {"entries", files.size()},
                                        {"bytes", cache.size_bytes()},
                                        {"max_bytes", cache.max_bytes()},
                                        {"per_arch", per_arch},
                                        {"damaged", damaged}}
                             .dump(2));
      return kExitOk;
    }
    fmt::print("directory  {}\nentries    {}\nsize       {} of {}\ndamaged    {}\n",
               cache.writable_directory(), files.size(), human_bytes(cache.size_bytes()),
               human_bytes(cache.max_bytes()), damaged);
    for (const auto& [arch, count] : per_arch) fmt::print("{:<10} {}\n", arch, count);
    return kExitOk;
  }

  // Damaged entries are only moved aside here; the next run that needs
  // one compiles it again.
  int verify(JitCache& cache) const {
    const auto report = cache.verify();
    if (json_) {
      nlohmann::json quarantined = nlohmann::json::array();
      for (const auto& f : report.quarantined) quarantined.push_back(to_json(f));
      fmt::print("{}\n", nlohmann::json{{"quarantined", quarantined},
                                        {"stale_temporaries_removed", report.stale_temporaries}}
                             .dump(2));
      return kExitOk;
    }
    for (const auto& f : report.quarantined) fmt::print("quarantined {}: {}\n", f.path, f.problem);
    for (const auto& path : report.stale_temporaries) fmt::print("removed {}\n", path);
    fmt::print(
        "verify: {} damaged entr{} moved to quarantine (compiled again when next needed), {} "
        "stale temporary file{} removed\n",
        report.quarantined.size(), report.quarantined.size() == 1 ? "y" : "ies",
        report.stale_temporaries.size(), report.stale_temporaries.size() == 1 ? "" : "s");
    return kExitOk;
  }

  CLI::App* command_ = nullptr;
  CLI::App *ls_ = nullptr, *stat_ = nullptr, *verify_ = nullptr, *gc_ = nullptr, *clear_ = nullptr;
  bool json_ = false;
  bool yes_ = false;
  std::uint64_t max_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Command> make_cache_command(CLI::App& app) {
  return std::make_unique<CacheCommand>(app);
}

}  // namespace convjit::cli
