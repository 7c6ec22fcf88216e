// A rules file: which calls each rule selects (call_match.hpp) and what it
// does to the dispatcher's choice for them.  JSON, because the project
// already reads and writes JSON everywhere (descriptors, records, tuning
// decisions) with nlohmann-json, and a rule's match mirrors the
// descriptor's JSON form:
//
//   {"version": 1, "rules": [
//     {"id": "cudnn-for-stem", "match": {"op": "conv", "name": "conv2d_*_c3_*"},
//      "force": "cudnn", "on_unavailable": "fallback"},
//     {"id": "no-direct-on-a100", "query": "conv[@arch=\"sm_80\"]", "deny": "jit[direct]"}]}
//
// A rule has an "id" (unique in its file), a "match" object or a "query"
// string, an optional "comment", and at least one action:
//   deny     a target or a list: never serve the call with it;
//   force    one target: serve the call with it, or fail ("on_unavailable":
//            "error", the default) or walk the chain ("fallback");
//   prefer   a target or a list: try these first, in order, then the chain;
//   tune     true: measure the candidates for this call even under `auto`.
// Files apply in order, as one list: every matching deny holds, the first
// matching force wins, prefers queue up in order.  Unknown keys, values,
// backends and variants are errors naming the file, the rule and the key.
#pragma once

#include <atomic>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/result.hpp"
#include "dispatcher/rules/backend_target.hpp"
#include "dispatcher/rules/call_match.hpp"

namespace convjit::rules {

struct Rule {
  std::string file;
  int index = 0;  // 0-based, in its file
  std::string id;
  CallMatch match;
  std::vector<Target> deny;
  std::optional<Target> force;
  bool fallback_when_unavailable = false;
  std::vector<Target> prefer;
  bool tune = false;
  std::string canonical;  // the rule's JSON as loaded, for the hash

  // "rules.json:0 cudnn-for-stem", as the log shows it.
  [[nodiscard]] std::string where() const;
};

template <class T>
struct ByRule {
  T value;
  const Rule* rule;
};

// What the matching rules say about one call.
struct RuleOutcome {
  std::vector<const Rule*> matched;  // in file order
  std::vector<ByRule<Target>> denied;
  std::optional<ByRule<Target>> forced;
  std::vector<ByRule<Target>> preferred;
  const Rule* tune = nullptr;  // the first matching rule asking to measure
  // Hex hash of the matched rules' text: part of the tuning key, so a
  // decision measured under rules serves only calls under the same rules.
  std::string hash;

  [[nodiscard]] bool any() const { return !matched.empty(); }
  // The rule denying `variant_id` of `backend` for the call, if one does.
  [[nodiscard]] const Rule* denier(std::string_view backend, std::string_view variant_id,
                                   const CallFacts& call) const;
  // Whether a rule denies some variants of `backend` (not all of it).
  [[nodiscard]] bool denies_variants_of(std::string_view backend) const;
};

class RuleSet {
 public:
  RuleSet() = default;
  // Each file in order; the first error stops loading.
  [[nodiscard]] static Result<std::shared_ptr<RuleSet>> load(const std::vector<std::string>& files);
  // One file's text; `file` names it in errors and logs.
  [[nodiscard]] static Result<std::shared_ptr<RuleSet>> parse(std::string_view text,
                                                              const std::string& file);

  [[nodiscard]] bool empty() const { return rules_.empty(); }
  [[nodiscard]] const std::vector<Rule>& rules() const { return rules_; }
  [[nodiscard]] const std::vector<std::string>& files() const { return files_; }

  // What the rules say about `call`; counts each matching rule as fired.
  [[nodiscard]] RuleOutcome apply(const CallFacts& call) const;
  // The same without counting (`convjit rules match`, `convjit query`).
  [[nodiscard]] RuleOutcome preview(const CallFacts& call) const;
  [[nodiscard]] std::vector<const Rule*> never_fired() const;

 private:
  [[nodiscard]] Status append(std::string_view text, const std::string& file);
  [[nodiscard]] Status check_force_not_denied() const;

  std::vector<std::string> files_;
  std::vector<Rule> rules_;
  std::unique_ptr<std::atomic<std::uint64_t>[]> fired_;  // per rule
};

}  // namespace convjit::rules
