// The rules the settings name (CONVJIT_RULES, convjit_set_rules_file),
// loaded once per change of the setting and shared by every dispatcher.
// Only first calls of a key consult them: a resolved call never does.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "dispatcher/result.hpp"
#include "dispatcher/rules/rule_set.hpp"

namespace convjit::rules {

class ActiveRules {
 public:
  static ActiveRules& instance();

  // The loaded rules; nullptr when none are set; the load error, naming the
  // setting, the file, the rule and the key, when they do not load.
  [[nodiscard]] Result<std::shared_ptr<const RuleSet>> current();

  // Loads `files` now, as current() will serve them once the setting names
  // them: convjit_set_rules_file reports a bad file at once, and the files
  // may change on disk afterwards without effect.
  [[nodiscard]] Status install(const std::vector<std::string>& files);

 private:
  ActiveRules() = default;
  static void report_never_fired();
  // Caller holds mutex_.
  void adopt(std::vector<std::string> files, Result<std::shared_ptr<RuleSet>> loaded,
             const std::string& origin);

  std::mutex mutex_;
  bool loaded_ = false;
  std::vector<std::string> files_;  // what rules_ was loaded from
  Result<std::shared_ptr<const RuleSet>> rules_{std::shared_ptr<const RuleSet>()};
  bool report_registered_ = false;
};

}  // namespace convjit::rules
