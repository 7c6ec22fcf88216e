#include "dispatcher/rules/active_rules.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>

#include "dispatcher/observe/verbose_log.hpp"
#include "dispatcher/settings.hpp"

namespace convjit::rules {

ActiveRules& ActiveRules::instance() {
  static ActiveRules* rules = new ActiveRules();  // never destroyed: read at exit
  return *rules;
}

Result<std::shared_ptr<const RuleSet>> ActiveRules::current() {
  const auto settings = SettingsStore::instance().snapshot();
  const Setting<std::vector<std::string>>& files = settings->rules_files;
  std::lock_guard lock(mutex_);
  if (loaded_ && files_ == files.value) return rules_;
  auto loaded = files.value.empty() ? Result<std::shared_ptr<RuleSet>>(std::shared_ptr<RuleSet>())
                                    : RuleSet::load(files.value);
  adopt(files.value, std::move(loaded), files.origin);
  return rules_;
}

Status ActiveRules::install(const std::vector<std::string>& files) {
  auto loaded = files.empty() ? Result<std::shared_ptr<RuleSet>>(std::shared_ptr<RuleSet>())
                              : RuleSet::load(files);
  if (!loaded.is_ok()) return loaded.status();
  std::lock_guard lock(mutex_);
  adopt(files, std::move(loaded), "convjit_set_rules_file");
  return Status::ok();
}

void ActiveRules::adopt(std::vector<std::string> files, Result<std::shared_ptr<RuleSet>> loaded,
                        const std::string& origin) {
  loaded_ = true;
  files_ = std::move(files);
  if (!loaded.is_ok()) {
    rules_ =
        Status(loaded.status().code(), fmt::format("{}: {}", origin, loaded.status().message()));
    return;
  }
  rules_ = std::shared_ptr<const RuleSet>(std::move(loaded).value());
  if (!rules_.value() || !VerboseLog::enabled(1)) return;
  VerboseLog::info("rules", fmt::format("{} ({} rules)", fmt::join(files_, ":"),
                                        rules_.value()->rules().size()));
  // After the logger exists, so this handler runs before it is destroyed.
  if (!report_registered_) std::atexit(report_never_fired);
  report_registered_ = true;
}

// At exit, with verbose on: the rules of the set in force that never
// matched a call, so that a typo in a match shows up.
void ActiveRules::report_never_fired() {
  ActiveRules& self = instance();
  std::lock_guard lock(self.mutex_);
  if (!self.rules_.is_ok() || !self.rules_.value() || !VerboseLog::enabled(1)) return;
  for (const Rule* rule : self.rules_.value()->never_fired())
    VerboseLog::info("rule_never_fired", rule->where());
}

}  // namespace convjit::rules
