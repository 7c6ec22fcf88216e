// The rules' say on one call the dispatcher is deciding: its facts, what
// the matching rules deny, force and prefer, and the lines the verbose log
// gets; plus the builds that honour the denies.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/backend.hpp"
#include "dispatcher/rules/rule_set.hpp"

namespace convjit::rules {

struct CallRules {
  CallFacts facts;
  RuleOutcome outcome;
  std::vector<std::string> notes;      // one per matching rule, for the log
  std::shared_ptr<const RuleSet> set;  // keeps the rules `outcome` points into alive

  // The active rules' outcome for the call; nullopt when no rule matches
  // (or none is set); the load error when the rules do not load.
  [[nodiscard]] static Result<std::optional<CallRules>> for_call(const OpDescriptor& desc,
                                                                 const convjit_device_t& device);

  [[nodiscard]] const Rule* denier(std::string_view backend, std::string_view variant_id) const {
    return outcome.denier(backend, variant_id, facts);
  }
  // The rule denying all of `backend`, if one does.
  [[nodiscard]] const Rule* denies_backend(std::string_view backend) const;
};

// check_support, then a kernel of `variant` ("" for the backend's choice)
// that no rule denies: with variants denied, the first id variant_ids()
// lists (or build_variants() makes) that no rule denies.  Skipped variants
// go into the trace.  `rules` may be null.
[[nodiscard]] Result<std::unique_ptr<Kernel>> build_allowed(
    Backend& backend, const OpDescriptor& desc, const convjit_device_t& device, BuildTrace& trace,
    std::string_view variant, const CallRules* rules);

// check_support, then every variant the backend offers for measuring that
// no rule denies.
[[nodiscard]] Result<std::vector<KernelVariant>> build_allowed_variants(
    Backend& backend, const OpDescriptor& desc, const convjit_device_t& device, BuildTrace& trace,
    const CallRules* rules);

}  // namespace convjit::rules
