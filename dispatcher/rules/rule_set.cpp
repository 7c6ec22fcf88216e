#include "dispatcher/rules/rule_set.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <set>

#include "cache/cache_entry.hpp"

namespace convjit::rules {

namespace {

constexpr int kFormatVersion = 1;
constexpr const char* kRuleKeys =
    "id, comment, match, query, deny, force, on_unavailable, prefer, tune";

bool is_rule_key(std::string_view key) {
  for (std::string_view k :
       {"id", "comment", "match", "query", "deny", "force", "on_unavailable", "prefer", "tune"})
    if (key == k) return true;
  return false;
}

// A target or a list of them.
Result<std::vector<Target>> targets_from(const nlohmann::json& value, const std::string& where) {
  std::vector<Target> targets;
  const bool list = value.is_array();
  if (list && value.empty()) return Status::invalid(where + ": an empty list names no target");
  for (std::size_t i = 0; i < (list ? value.size() : 1); ++i) {
    auto target =
        Target::from_json(list ? value[i] : value, list ? fmt::format("{}[{}]", where, i) : where);
    if (!target.is_ok()) return target.status();
    targets.push_back(std::move(target).value());
  }
  return targets;
}

Status read_match(const nlohmann::json& j, const std::string& where, Rule& rule) {
  if (j.contains("match") == j.contains("query"))
    return Status::invalid(fmt::format(
        "{}: give \"match\" (an object) or \"query\" (a string), one of them; \"match\": {{}} "
        "selects every call",
        where));
  if (j.contains("query") && !j["query"].is_string())
    return Status::invalid(where + ": \"query\" takes a string, e.g. conv2d[@groups>1]");
  auto match = j.contains("match") ? CallMatch::from_json(j["match"], where)
                                   : CallMatch::from_query(j["query"].get<std::string>(), where);
  if (!match.is_ok()) return match.status();
  rule.match = std::move(match).value();
  return Status::ok();
}

Status read_actions(const nlohmann::json& j, const std::string& where, Rule& rule) {
  for (const char* key : {"deny", "prefer"}) {
    if (!j.contains(key)) continue;
    auto targets = targets_from(j[key], fmt::format("{} key '{}'", where, key));
    if (!targets.is_ok()) return targets.status();
    (std::string_view(key) == "deny" ? rule.deny : rule.prefer) = std::move(targets).value();
  }
  if (j.contains("force")) {
    auto target = Target::from_json(j["force"], where + " key 'force'");
    if (!target.is_ok()) return target.status();
    rule.force = std::move(target).value();
  }
  if (j.contains("on_unavailable")) {
    const auto& v = j["on_unavailable"];
    if (!rule.force)
      return Status::invalid(where +
                             ": \"on_unavailable\" qualifies a \"force\"; this rule has none");
    if (!v.is_string() || (v != "error" && v != "fallback"))
      return Status::invalid(where + ": \"on_unavailable\" is \"error\" or \"fallback\"");
    rule.fallback_when_unavailable = v == "fallback";
  }
  if (j.contains("tune")) {
    if (!j["tune"].is_boolean() || !j["tune"].get<bool>())
      return Status::invalid(where + ": \"tune\" takes true (leave it out for false)");
    rule.tune = true;
  }
  if (rule.deny.empty() && !rule.force && rule.prefer.empty() && !rule.tune)
    return Status::invalid(where + ": the rule does nothing; give deny, force, prefer or tune");
  for (const Target& d : rule.deny)
    if (rule.force && d == *rule.force)
      return Status::invalid(
          fmt::format("{}: forces {} and denies it too", where, rule.force->label()));
  return Status::ok();
}

Result<Rule> read_rule(const nlohmann::json& j, const std::string& file, int index) {
  std::string where = fmt::format("{}: rule {}", file, index);
  if (!j.is_object()) return Status::invalid(where + ": a rule is an object");
  if (!j.contains("id") || !j["id"].is_string() || j["id"].get<std::string>().empty())
    return Status::invalid(where + ": needs an \"id\" (a non-empty string)");
  Rule rule;
  rule.file = file;
  rule.index = index;
  rule.id = j["id"].get<std::string>();
  where += fmt::format(" ({})", rule.id);
  for (const auto& [key, value] : j.items())
    if (!is_rule_key(key))
      return Status::invalid(
          fmt::format("{}: unknown key '{}'; the keys are {}", where, key, kRuleKeys));
  if (j.contains("comment") && !j["comment"].is_string())
    return Status::invalid(where + ": \"comment\" takes a string");
  if (Status s = read_match(j, where, rule); !s.is_ok()) return s;
  if (Status s = read_actions(j, where, rule); !s.is_ok()) return s;
  rule.canonical = j.dump();
  return rule;
}

}  // namespace

std::string Rule::where() const { return fmt::format("{}:{} {}", file, index, id); }

const Rule* RuleOutcome::denier(std::string_view backend, std::string_view variant_id,
                                const CallFacts& call) const {
  for (const auto& d : denied)
    if (d.value.covers(backend, variant_id, call)) return d.rule;
  return nullptr;
}

bool RuleOutcome::denies_variants_of(std::string_view backend) const {
  return std::any_of(denied.begin(), denied.end(), [&](const ByRule<Target>& d) {
    return d.value.backend() == backend && d.value.names_variant();
  });
}

Status RuleSet::append(std::string_view text, const std::string& file) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::invalid(file + ": not valid JSON");
  if (!j.is_object() || !j.contains("version") || !j.contains("rules"))
    return Status::invalid(file + ": expected {\"version\": 1, \"rules\": [...]}");
  for (const auto& [key, value] : j.items())
    if (key != "version" && key != "rules")
      return Status::invalid(
          fmt::format("{}: unknown key '{}'; the file's keys are version and rules", file, key));
  if (j["version"] != kFormatVersion)
    return Status::invalid(
        fmt::format("{}: version {} is not supported; this convjit reads "
                    "version {}",
                    file, j["version"].dump(), kFormatVersion));
  if (!j["rules"].is_array()) return Status::invalid(file + ": \"rules\" must be a list");
  std::set<std::string> ids;
  for (std::size_t i = 0; i < j["rules"].size(); ++i) {
    auto rule = read_rule(j["rules"][i], file, static_cast<int>(i));
    if (!rule.is_ok()) return rule.status();
    if (!ids.insert(rule.value().id).second)
      return Status::invalid(fmt::format("{}: rule {}: id '{}' is already taken in this file", file,
                                         i, rule.value().id));
    rules_.push_back(std::move(rule).value());
  }
  files_.push_back(file);
  return Status::ok();
}

// A force of something a rule denies is an error at load wherever the two
// rules select the same calls for certain: the deny selects every call, or
// both rules select by the same tests.  Other overlaps are caught per call.
Status RuleSet::check_force_not_denied() const {
  for (const Rule& f : rules_) {
    if (!f.force) continue;
    for (const Rule& d : rules_)
      for (const Target& t : d.deny) {
        const bool same_calls = d.match.summary().empty() || d.match.summary() == f.match.summary();
        const bool covered =
            t.backend() == f.force->backend() && (!t.names_variant() || t == *f.force);
        if (same_calls && covered)
          return Status::invalid(
              fmt::format("{}: forces {}, which rule {} denies for the same calls", f.where(),
                          f.force->label(), d.where()));
      }
  }
  return Status::ok();
}

Result<std::shared_ptr<RuleSet>> RuleSet::parse(std::string_view text, const std::string& file) {
  auto set = std::make_shared<RuleSet>();
  if (Status s = set->append(text, file); !s.is_ok()) return s;
  if (Status s = set->check_force_not_denied(); !s.is_ok()) return s;
  set->fired_ = std::make_unique<std::atomic<std::uint64_t>[]>(set->rules_.size());
  return set;
}

Result<std::shared_ptr<RuleSet>> RuleSet::load(const std::vector<std::string>& files) {
  auto set = std::make_shared<RuleSet>();
  for (const std::string& file : files) {
    auto text = read_file(file);
    if (!text.is_ok())
      return Status::not_available(fmt::format("rules file {}: {}", file, text.status().message()));
    if (Status s = set->append(text.value(), file); !s.is_ok()) return s;
  }
  if (Status s = set->check_force_not_denied(); !s.is_ok()) return s;
  set->fired_ = std::make_unique<std::atomic<std::uint64_t>[]>(set->rules_.size());
  return set;
}

RuleOutcome RuleSet::preview(const CallFacts& call) const {
  RuleOutcome out;
  std::string text;
  for (const Rule& rule : rules_) {
    if (!rule.match.matches(call)) continue;
    out.matched.push_back(&rule);
    text += rule.canonical + "\n";
    for (const Target& t : rule.deny) out.denied.push_back({t, &rule});
    if (rule.force && !out.forced) out.forced = ByRule<Target>{*rule.force, &rule};
    for (const Target& t : rule.prefer) out.preferred.push_back({t, &rule});
    if (rule.tune && !out.tune) out.tune = &rule;
  }
  if (!text.empty()) {
    const XXH128_hash_t h = XXH3_128bits(text.data(), text.size());
    out.hash = fmt::format("{:016x}{:016x}", h.high64, h.low64);
  }
  return out;
}

RuleOutcome RuleSet::apply(const CallFacts& call) const {
  RuleOutcome out = preview(call);
  for (const Rule* rule : out.matched)
    fired_[static_cast<std::size_t>(rule - rules_.data())].fetch_add(1, std::memory_order_relaxed);
  return out;
}

std::vector<const Rule*> RuleSet::never_fired() const {
  std::vector<const Rule*> idle;
  for (std::size_t i = 0; i < rules_.size(); ++i)
    if (fired_[i].load(std::memory_order_relaxed) == 0) idle.push_back(&rules_[i]);
  return idle;
}

}  // namespace convjit::rules
