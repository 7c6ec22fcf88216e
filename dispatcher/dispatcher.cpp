#include "dispatcher/dispatcher.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <array>
#include <chrono>

#include "dispatcher/backends/cudnn/cudnn_backend.hpp"
#include "dispatcher/backends/cudnn/cudnn_library.hpp"
#include "dispatcher/backends/emulator/emulator_backend.hpp"
#include "dispatcher/backends/jit/jit_backend.hpp"
#include "dispatcher/backends/jit/nvrtc_compiler.hpp"
#include "dispatcher/backends/onednn/onednn_backend.hpp"
#include "dispatcher/backends/onednn/onednn_library.hpp"
#include "dispatcher/backends/reference/reference_backend.hpp"
#include "dispatcher/backends/tuned/tuned_library_backend.hpp"
#include "dispatcher/c_api/c_enum.hpp"
#include "dispatcher/cuda/cuda_driver.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/observe/recorder.hpp"
#include "dispatcher/observe/verbose_log.hpp"
#include "dispatcher/settings.hpp"
#include "dispatcher/tuning/tuning.hpp"
#include "version.hpp"

namespace convjit {

struct Dispatcher::Entry {
  std::mutex mutex;
  std::condition_variable resolved;
  bool pending = true;
  std::unique_ptr<Resolution> resolution;  // set on success
  Status failure;                          // set on failure
};

namespace {

DispatchKey make_key(const OpDescriptor& desc, const convjit_device_t& device, Policy policy) {
  DispatchKey key;
  key.desc = desc;
  key.device_kind = raw_c_enum(device.kind);  // checked later, by device_capability()
  key.device_ordinal = key.device_kind == CONVJIT_DEVICE_HOST ? 0 : device.ordinal;
  key.policy = static_cast<std::int32_t>(policy);
  key.rules_epoch = SettingsStore::instance().rules_epoch();
  return key;
}

// A small direct-mapped cache per thread in front of the shared table: the
// hot path hashes the key, compares one slot and calls the kernel.
struct ThreadCacheSlot {
  std::uint64_t owner = 0;       // Dispatcher::id_, never reused, unlike addresses
  std::uint64_t generation = 0;  // the owner's rescan generation when cached
  DispatchKey key;
  const Resolution* resolution = nullptr;
};
constexpr std::size_t kThreadCacheSlots = 64;
thread_local std::array<ThreadCacheSlot, kThreadCacheSlots> t_cache;

// The same, keyed by raw API arguments (Dispatcher::execute_call).
struct CallCacheSlot {
  std::uint64_t owner = 0;
  std::uint64_t generation = 0;
  ApiCallKey key;
  const Resolution* resolution = nullptr;
};
thread_local std::array<CallCacheSlot, kThreadCacheSlots> t_call_cache;

std::size_t call_slot(const ApiCallKey& key) { return key.hash() % kThreadCacheSlots; }
std::atomic<std::uint64_t> next_dispatcher_id{0};

Status device_capability(const OpDescriptor& desc, const convjit_device_t& device) {
  if (const int kind = raw_c_enum(device.kind);
      kind != CONVJIT_DEVICE_HOST && kind != CONVJIT_DEVICE_CUDA)
    return Status::invalid(fmt::format(
        "device kind {} is neither CONVJIT_DEVICE_HOST nor CONVJIT_DEVICE_CUDA", kind));
  if (device.kind == CONVJIT_DEVICE_CUDA && device.ordinal < 0)
    return Status::invalid(
        fmt::format("CUDA device ordinal {} must be non-negative", device.ordinal));
  if (device.kind == CONVJIT_DEVICE_CUDA && desc.dtype == DataType::f64)
    return Status::unsupported(
        "f64 is computed on the host device only; use "
        "CONVJIT_DEVICE_HOST or a f32/f16/bf16 tensor");
  return Status::ok();
}

std::string device_label(const convjit_device_t& device) {
  return device.kind == CONVJIT_DEVICE_HOST ? std::string("host")
                                            : fmt::format("cuda:{}", device.ordinal);
}

// Which backends a policy lets the chain use.
bool policy_allows(Policy policy, std::string_view backend) {
  switch (policy) {
    case Policy::automatic:
      return backend != "emulator";  // a debugging tool, never picked unasked
    case Policy::reference:
      return backend == "reference";
    case Policy::jit:
      return backend == "jit";
    case Policy::cudnn:
      return backend == "cudnn";
    case Policy::onednn:
      return backend == "onednn";
    case Policy::tuned:
      return backend != "emulator";  // every candidate is measured
    case Policy::emulate:
      return backend == "emulator";
  }
  return false;
}

// What a tuning decision depends on besides the descriptor: the device,
// and the versions of everything that can change which backend is fastest.
// A decision measured under rules is stored under their hash: it never
// serves a call the same rules do not govern.
TuningKey tuning_key(const OpDescriptor& desc, const convjit_device_t& device,
                     const rules::CallRules* rules) {
  TuningKeyFields f;
  if (rules != nullptr) f.rules = rules->outcome.hash;
  f.descriptor = descriptor_name(desc);
  f.device = "host";
  if (device.kind == CONVJIT_DEVICE_CUDA) {
    f.device = CudaDriver::instance().name_of(device.ordinal);
    f.arch = CudaDriver::instance().arch_of(device.ordinal);
    f.cudnn_version = CudnnLibrary::instance().version();
    f.nvrtc_version = nvrtc_version();
  } else if (OnednnLibrary::instance().available().is_ok()) {
    f.onednn = OnednnLibrary::instance().version() + " " + OnednnLibrary::instance().cpu_isa();
  }
  f.convjit_version = kVersionString;
  return make_tuning_key(f);
}

Status no_backend(convjit_status_t code, const OpDescriptor& desc, const convjit_device_t& device,
                  const std::string& rejections) {
  return Status(code, fmt::format("no backend can run {} on {}:{}", descriptor_name(desc),
                                  device_label(device), rejections));
}

}  // namespace

std::size_t DispatchKeyHash::operator()(const DispatchKey& key) const {
  return XXH3_64bits(&key, sizeof key);
}

namespace {

std::vector<std::unique_ptr<Backend>> default_chain(bool tuned_libraries) {
  std::vector<std::unique_ptr<Backend>> chain;
  if (tuned_libraries) chain.push_back(std::make_unique<TunedLibraryBackend>());
  chain.push_back(std::make_unique<JitBackend>());
  chain.push_back(std::make_unique<CudnnBackend>());
  chain.push_back(std::make_unique<OnednnBackend>());
  chain.push_back(std::make_unique<ReferenceBackend>());
  chain.push_back(std::make_unique<EmulatorBackend>());
  return chain;
}

}  // namespace

Dispatcher& Dispatcher::instance() {
  static Dispatcher* dispatcher = new Dispatcher(default_chain(true));
  return *dispatcher;
}

Dispatcher& Dispatcher::without_tuned_libraries() {
  static Dispatcher* dispatcher = new Dispatcher(default_chain(false));
  return *dispatcher;
}

Result<Resolution> Dispatcher::choose(const OpDescriptor& desc, const convjit_device_t& device) {
  if (Status capable = device_capability(desc, device); !capable.is_ok()) return capable;
  return decide(desc, device, SettingsStore::instance().policy());
}

Result<Resolution> Dispatcher::build_pinned(const OpDescriptor& desc,
                                            const convjit_device_t& device,
                                            std::string_view backend, std::string_view variant) {
  if (Status capable = device_capability(desc, device); !capable.is_ok()) return capable;
  std::string names;
  for (const auto& candidate : chain_) {
    names += fmt::format("{}{}", names.empty() ? "" : ", ", candidate->name());
    if (candidate->name() != backend) continue;
    BuildTrace trace;
    auto kernel = build_if_supported(*candidate, desc, device, trace, variant);
    if (!kernel.is_ok()) return kernel.status();
    return Resolution{desc, std::move(kernel).value(), candidate->name(),
                      variant.empty() ? trace.variant : std::string(variant), "pinned", false};
  }
  return Status::not_available(
      fmt::format("no backend named '{}' here; the choices are {}", backend, names));
}

Dispatcher::Dispatcher(std::vector<std::unique_ptr<Backend>> chain)
    : id_(next_dispatcher_id.fetch_add(1) + 1), chain_(std::move(chain)) {}

namespace {

// One step of a walk: a backend, with the target a rule prefers on it.
struct Attempt {
  Backend* backend;
  const rules::Target* target = nullptr;  // null: the backend's own choice
  const rules::Rule* preferred_by = nullptr;
};

// Whether a rule denies all of `backend`; if so, says so in `notes`.
bool denied_whole(const rules::CallRules* rules, const Backend& backend, std::string& notes) {
  const rules::Rule* rule = rules ? rules->denies_backend(backend.name()) : nullptr;
  if (rule != nullptr)
    notes += fmt::format(" {}: denied by rule {};", backend.name(), rule->where());
  return rule != nullptr;
}

// The targets the rules prefer, in order, then the chain's backends; the
// policy's and the denied backends left out (the denied ones are reported
// in `rejections`).
std::vector<Attempt> attempts(const std::vector<std::unique_ptr<Backend>>& chain, Policy policy,
                              const rules::CallRules* rules, std::string& rejections) {
  const auto usable = [&](const Backend& b) {
    return policy_allows(policy, b.name()) &&
           (rules == nullptr || !rules->denies_backend(b.name()));
  };
  std::vector<Attempt> order;
  if (rules != nullptr)
    for (const auto& p : rules->outcome.preferred)
      for (const auto& b : chain)
        if (b->name() == p.value.backend() && usable(*b))
          order.push_back({b.get(), &p.value, p.rule});
  for (const auto& b : chain) {
    if (!policy_allows(policy, b->name()) || denied_whole(rules, *b, rejections)) continue;
    const bool tried = std::any_of(order.begin(), order.end(), [&](const Attempt& a) {
      return a.backend == b.get() && (a.target == nullptr || !a.target->names_variant());
    });
    if (!tried) order.push_back({b.get()});
  }
  return order;
}

// A kernel for the target on `backend`: a cuDNN algorithm by number is the
// first of its math types that builds; anything else is built by id.
Result<std::unique_ptr<Kernel>> build_target(Backend& backend, const rules::Target* target,
                                             const OpDescriptor& desc,
                                             const convjit_device_t& device, BuildTrace& trace,
                                             const rules::CallRules* rules) {
  if (target == nullptr) return rules::build_allowed(backend, desc, device, trace, "", rules);
  const std::string variant = target->variant_for(rules->facts);
  if (!target->names_variant() || !variant.empty())
    return rules::build_allowed(backend, desc, device, trace, variant, rules);
  auto variants = rules::build_allowed_variants(backend, desc, device, trace, rules);
  if (!variants.is_ok()) return variants.status();
  for (KernelVariant& v : variants.value())
    if (target->covers(backend.name(), v.id, rules->facts)) {
      trace.variant = v.id;
      return std::move(v.kernel);
    }
  return Status::not_available(
      fmt::format("{} offers no {} for this call", backend.name(), target->label()));
}

}  // namespace

Result<Resolution> Dispatcher::walk_chain(const OpDescriptor& desc, const convjit_device_t& device,
                                          Policy policy, const CallRules* rules, Traces& traces) {
  std::string rejections;
  bool all_unavailable = true;
  for (const Attempt& a : attempts(chain_, policy, rules, rejections)) {
    BuildTrace& trace = traces.emplace_back(a.backend->name(), BuildTrace{}).second;
    auto kernel = build_target(*a.backend, a.target, desc, device, trace, rules);
    if (kernel.is_ok()) {
      std::string why = a.preferred_by      ? "preferred by rule " + a.preferred_by->where()
                        : rejections.empty() ? "first backend in the chain that supports it"
                                             : "earlier backends declined:" + rejections;
      return Resolution{desc, std::move(kernel).value(), a.backend->name(), trace.variant,
                        std::move(why), !rejections.empty()};
    }
    all_unavailable = all_unavailable && kernel.status().code() == CONVJIT_STATUS_NOT_AVAILABLE;
    rejections += fmt::format(" {}: {};", a.target ? a.target->label() : a.backend->name(),
                              kernel.status().message());
  }
  if (rejections.empty())
    return Status::not_available(fmt::format("policy {} selects no backend of this build for {}",
                                             policy_name(policy), device_label(device)));
  return no_backend(all_unavailable ? CONVJIT_STATUS_NOT_AVAILABLE : CONVJIT_STATUS_UNSUPPORTED,
                    desc, device, rejections);
}

Result<std::optional<Resolution>> Dispatcher::serve_forced(const OpDescriptor& desc,
                                                           const convjit_device_t& device,
                                                           Policy policy, const CallRules& rules,
                                                           Traces& traces) {
  const auto& [target, rule] = *rules.outcome.forced;
  const std::string variant = target.variant_for(rules.facts);
  if (const rules::Rule* d = rules.denier(target.backend(), variant))
    return Status::invalid(fmt::format("rule {} forces {}, which rule {} denies for this call",
                                       rule->where(), target.label(), d->where()));
  Status why = Status::not_available(fmt::format(
      "this dispatcher has no {} backend{}", target.backend(),
      target.backend() == rules::kTunedLibraryBackend ? " (pinned plans and export do not load "
                                                        "tuned libraries)"
                                                      : ""));
  const bool any_backend = policy == Policy::automatic || policy == Policy::tuned;
  for (const auto& b : chain_) {
    if (b->name() != target.backend()) continue;
    if (!any_backend && !policy_allows(policy, b->name())) {
      why = Status::not_available(fmt::format("policy {} excludes it", policy_name(policy)));
      break;
    }
    BuildTrace& trace = traces.emplace_back(b->name(), BuildTrace{}).second;
    auto kernel = build_target(*b, &target, desc, device, trace, &rules);
    if (kernel.is_ok())
      return std::optional<Resolution>(Resolution{desc, std::move(kernel).value(), b->name(),
                                                  trace.variant, "forced by rule " + rule->where(),
                                                  false});
    why = kernel.status();
    break;
  }
  if (rule->fallback_when_unavailable) return std::optional<Resolution>();
  return Status(why.code(),
                fmt::format("rule {} forces {}, which cannot serve {}: {}", rule->where(),
                            target.label(), descriptor_name(desc), why.message()));
}

std::optional<Resolution> Dispatcher::from_tuning_decision(const OpDescriptor& desc,
                                                          const convjit_device_t& device,
                                                          const StoredTuning& stored,
                                                          Traces& traces) {
  auto decision = stored.decisions.lookup(stored.key);
  if (!decision.is_ok()) return std::nullopt;
  const TuningDecision& d = decision.value();
  for (const auto& backend : chain_) {
    if (backend->name() != d.backend) continue;
    BuildTrace& trace = traces.emplace_back(backend->name(), BuildTrace{}).second;
    trace.probes.push_back(
        {stored.key.relative_path, "tuning decision: " + variant_label(d.backend, d.variant)});
    auto kernel = build_if_supported(*backend, desc, device, trace, d.variant);
    if (!kernel.is_ok()) return std::nullopt;  // measure again
    return Resolution{desc, std::move(kernel).value(), backend->name(),
                      d.variant.empty() ? trace.variant : d.variant,
                      "tuning decision stored earlier (" + d.summary + ")", false};
  }
  return std::nullopt;
}

Result<Resolution> Dispatcher::tune(const OpDescriptor& desc, const convjit_device_t& device,
                                    const StoredTuning& stored, const CallRules* rules,
                                    Traces& traces) {
  std::vector<TuningCandidate> candidates;
  std::string declined;
  for (const auto& backend : chain_) {
    if (!policy_allows(Policy::tuned, backend->name()) || denied_whole(rules, *backend, declined))
      continue;
    BuildTrace& trace = traces.emplace_back(backend->name(), BuildTrace{}).second;
    auto variants = rules::build_allowed_variants(*backend, desc, device, trace, rules);
    if (!variants.is_ok()) {
      declined += fmt::format(" {}: {};", backend->name(), variants.status().message());
      continue;
    }
    for (KernelVariant& v : variants.value())
      candidates.push_back({backend->name(), std::move(v.id), std::move(v.kernel), 0, ""});
  }
  if (candidates.empty()) return no_backend(CONVJIT_STATUS_NOT_AVAILABLE, desc, device, declined);
  // One measurement at a time: kernels timed concurrently would slow each
  // other down and skew the choice.  Only first calls under `tuned` wait.
  static std::mutex measuring;
  std::unique_lock measurement_lock(measuring);
  auto choice = choose_by_measurement(desc, device, candidates);
  measurement_lock.unlock();
  if (!choice.is_ok()) return choice.status();
  TuningCandidate& winner = candidates[choice.value().winner];
  const Status saved =
      stored.decisions.store(stored.key, {std::string(winner.backend), winner.variant,
                                          choice.value().summary});
  return Resolution{desc, std::move(winner.kernel), winner.backend, winner.variant,
                    fmt::format("measured: {}{}; {}", choice.value().summary,
                                declined.empty() ? "" : "; declined:" + declined,
                                saved.is_ok() ? "decision saved as " + stored.key.relative_path
                                              : "not saved: " + saved.message()),
                    false};
}

// A forced target first; else a stored tuning decision (under tuned and
// auto, or a rule's `tune`), measuring under tuned when there is none;
// else the chain.
Result<Resolution> Dispatcher::decide_under_rules(const OpDescriptor& desc,
                                                  const convjit_device_t& device, Policy policy,
                                                  const CallRules* rules, Traces& traces) {
  if (rules != nullptr && rules->outcome.forced) {
    auto forced = serve_forced(desc, device, policy, *rules, traces);
    if (!forced.is_ok()) return forced.status();
    if (forced.value()) return std::move(*forced.value());
  }
  const bool measure = policy == Policy::tuned ||
                       (policy == Policy::automatic && rules != nullptr && rules->outcome.tune);
  if (policy == Policy::automatic || policy == Policy::tuned) {
    TuningDecisions decisions(SettingsStore::instance().snapshot()->cache_path.value);
    if (measure || decisions.any_stored()) {
      const StoredTuning stored{std::move(decisions), tuning_key(desc, device, rules)};
      if (auto decided = from_tuning_decision(desc, device, stored, traces))
        return std::move(*decided);
      if (measure) return tune(desc, device, stored, rules, traces);
    }
  }
  return walk_chain(desc, device, policy, rules, traces);
}

// Decides for a new key under the rules that match it, then logs and
// records what it decided.
Result<Resolution> Dispatcher::decide(const OpDescriptor& desc, const convjit_device_t& device,
                                      Policy policy) {
  const auto start = std::chrono::steady_clock::now();
  Traces traces;
  auto rules = CallRules::for_call(desc, device);
  const CallRules* matched = rules.is_ok() && rules.value() ? &*rules.value() : nullptr;
  auto resolved = rules.is_ok() ? decide_under_rules(desc, device, policy, matched, traces)
                                : Result<Resolution>(rules.status());
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const std::string_view backend = resolved.is_ok() ? resolved.value().backend : std::string_view();
  if (VerboseLog::enabled(1))
    VerboseLog::decision({desc, device, traces, backend,
                          resolved.is_ok() ? resolved.value().reason : resolved.status().message(),
                          ms, matched ? &matched->notes : nullptr});
  if (resolved.is_ok()) Recorder::instance().record(desc, backend);
  return resolved;
}

std::shared_ptr<Dispatcher::Entry> Dispatcher::claim_entry(const DispatchKey& key, bool& owner) {
  std::lock_guard lock(table_mutex_);
  auto [it, inserted] = table_.try_emplace(key, nullptr);
  if (inserted) it->second = std::make_shared<Entry>();
  owner = inserted;
  return it->second;
}

Result<const Resolution*> Dispatcher::resolve(const OpDescriptor& desc,
                                              const convjit_device_t& device) {
  if (Status capable = device_capability(desc, device); !capable.is_ok()) return capable;
  const Policy policy = SettingsStore::instance().policy();
  bool owner = false;
  const std::shared_ptr<Entry> entry = claim_entry(make_key(desc, device, policy), owner);
  std::unique_lock lock(entry->mutex);
  if (owner) {
    lock.unlock();  // resolve without holding any lock others could need
    auto resolved = decide(desc, device, policy);
    lock.lock();
    if (resolved.is_ok()) {
      entry->resolution = std::make_unique<Resolution>(std::move(resolved).value());
    } else {
      entry->failure = resolved.status();
    }
    entry->pending = false;
    entry->resolved.notify_all();
  }
  entry->resolved.wait(lock, [&] { return !entry->pending; });
  if (!entry->resolution) return entry->failure;
  return static_cast<const Resolution*>(entry->resolution.get());
}

std::vector<std::string_view> Dispatcher::backend_names() const {
  std::vector<std::string_view> names;
  for (const auto& backend : chain_) names.push_back(backend->name());
  return names;
}

void Dispatcher::rescan() {
  std::lock_guard lock(table_mutex_);
  for (auto it = table_.begin(); it != table_.end();) {
    Entry& entry = *it->second;
    std::lock_guard entry_lock(entry.mutex);
    const bool forget = !entry.pending && (!entry.resolution || entry.resolution->rescannable);
    if (forget) {
      retired_.push_back(std::move(it->second));
      it = table_.erase(it);
    } else {
      ++it;
    }
  }
  generation_.fetch_add(1, std::memory_order_release);
}

Status Dispatcher::run(const Resolution& resolution, const ExecArgs& args,
                       std::string_view* backend) {
  if (backend) *backend = resolution.backend;
  if (!VerboseLog::enabled(2)) return resolution.kernel->execute(args);
  const auto start = std::chrono::steady_clock::now();
  Status status = resolution.kernel->execute(args);
  VerboseLog::execution(
      resolution.desc, resolution.backend,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return status;
}

const Resolution* Dispatcher::cached_call(const ApiCallKey& key) const {
  const CallCacheSlot& slot = t_call_cache[call_slot(key)];
  if (slot.owner != id_ || slot.generation != generation_.load(std::memory_order_acquire) ||
      !(slot.key == key))
    return nullptr;
  return slot.resolution;
}

void Dispatcher::remember_call(const ApiCallKey& key, const Resolution* resolution) {
  t_call_cache[call_slot(key)] = {id_, generation_.load(std::memory_order_acquire), key,
                                  resolution};
}

Status Dispatcher::execute(const OpDescriptor& desc, const convjit_device_t& device,
                           const ExecArgs& args, std::string_view* backend) {
  const Policy policy = SettingsStore::instance().policy();
  const DispatchKey key = make_key(desc, device, policy);
  const std::uint64_t generation = generation_.load(std::memory_order_acquire);
  ThreadCacheSlot& slot = t_cache[DispatchKeyHash{}(key) % kThreadCacheSlots];
  if (slot.owner != id_ || slot.generation != generation || slot.resolution == nullptr ||
      !(slot.key == key)) {
    auto resolved = resolve(desc, device);
    if (!resolved.is_ok()) return resolved.status();
    slot = {id_, generation, key, resolved.value()};
  }
  return run(*slot.resolution, args, backend);
}

}  // namespace convjit
