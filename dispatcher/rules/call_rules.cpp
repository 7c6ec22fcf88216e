#include "dispatcher/rules/call_rules.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "dispatcher/rules/active_rules.hpp"

namespace convjit::rules {

namespace {

std::string labels(const std::vector<Target>& targets) {
  std::vector<std::string> names;
  for (const Target& t : targets) names.push_back(t.label());
  return fmt::format("{}", fmt::join(names, ", "));
}

// "rule r.json:0 no-direct: matched op=conv dir=fwd; denies jit[direct]".
std::string note(const Rule& rule) {
  std::vector<std::string> acts;
  if (!rule.deny.empty()) acts.push_back("denies " + labels(rule.deny));
  if (rule.force)
    acts.push_back(fmt::format("forces {}{}", rule.force->label(),
                               rule.fallback_when_unavailable ? " (else the chain)" : ""));
  if (!rule.prefer.empty()) acts.push_back("prefers " + labels(rule.prefer));
  if (rule.tune) acts.push_back("measures the candidates");
  return fmt::format("rule {}: matched {}; {}", rule.where(),
                     rule.match.summary().empty() ? "every call" : rule.match.summary(),
                     fmt::join(acts, "; "));
}

Status denied_status(std::string_view backend, std::string_view variant, const Rule& rule) {
  return Status::not_available(
      fmt::format("{} is denied by rule {}", variant_label(backend, variant), rule.where()));
}

}  // namespace

Result<std::optional<CallRules>> CallRules::for_call(const OpDescriptor& desc,
                                                     const convjit_device_t& device) {
  auto set = ActiveRules::instance().current();
  if (!set.is_ok()) return set.status();
  if (!set.value() || set.value()->empty()) return std::optional<CallRules>();
  CallRules rules;
  rules.facts = call_facts(desc, device);
  rules.outcome = set.value()->apply(rules.facts);
  if (!rules.outcome.any()) return std::optional<CallRules>();
  rules.set = set.value();
  for (const Rule* rule : rules.outcome.matched) rules.notes.push_back(note(*rule));
  return std::optional<CallRules>(std::move(rules));
}

const Rule* CallRules::denies_backend(std::string_view backend) const {
  for (const auto& d : outcome.denied)
    if (d.value.backend() == backend && !d.value.names_variant()) return d.rule;
  return nullptr;
}

Result<std::unique_ptr<Kernel>> build_allowed(Backend& backend, const OpDescriptor& desc,
                                              const convjit_device_t& device, BuildTrace& trace,
                                              std::string_view variant, const CallRules* rules) {
  const bool filtered = rules != nullptr && rules->outcome.denies_variants_of(backend.name());
  if (!variant.empty() && rules != nullptr)
    if (const Rule* rule = rules->denier(backend.name(), variant))
      return denied_status(backend.name(), variant, *rule);
  if (!variant.empty() || !filtered)
    return build_if_supported(backend, desc, device, trace, variant);
  if (Status s = backend.check_support(desc, device); !s.is_ok()) return s;
  const auto ids = backend.variant_ids(desc, device);
  if (!ids) {
    auto variants = build_allowed_variants(backend, desc, device, trace, rules);
    if (!variants.is_ok()) return variants.status();
    if (variants.value().empty())
      return Status::not_available(
          fmt::format("rules deny every variant {} offers for this call", backend.name()));
    trace.variant = variants.value().front().id;
    return std::move(variants.value().front().kernel);
  }
  std::string passed_over;
  for (const std::string& id : *ids) {
    if (const Rule* rule = rules->denier(backend.name(), id)) {
      trace.probes.push_back({"rules", denied_status(backend.name(), id, *rule).message()});
      continue;
    }
    auto kernel = backend.build_variant(desc, device, id, trace);
    if (kernel.is_ok()) {
      trace.variant = id;
      return kernel;
    }
    passed_over += fmt::format(" {}: {};", id, kernel.status().message());
  }
  return Status::not_available(
      fmt::format("no variant of {} that the rules leave can serve the call{}", backend.name(),
                  passed_over.empty() ? " (they deny all of them)" : ":" + passed_over));
}

Result<std::vector<KernelVariant>> build_allowed_variants(Backend& backend,
                                                          const OpDescriptor& desc,
                                                          const convjit_device_t& device,
                                                          BuildTrace& trace,
                                                          const CallRules* rules) {
  auto variants = build_variants_if_supported(backend, desc, device, trace);
  if (!variants.is_ok() || rules == nullptr) return variants;
  std::vector<KernelVariant> kept;
  for (KernelVariant& v : variants.value()) {
    const std::string id = v.id.empty() ? trace.variant : v.id;
    if (const Rule* rule = rules->denier(backend.name(), id)) {
      trace.probes.push_back({"rules", denied_status(backend.name(), id, *rule).message()});
      continue;
    }
    kept.push_back(std::move(v));
  }
  return kept;
}

}  // namespace convjit::rules
