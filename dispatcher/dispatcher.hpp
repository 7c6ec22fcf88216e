// The dispatcher: resolves each (descriptor, device, policy) once by walking
// the backend chain, remembers the kernel it chose and why, and serves
// later calls from a thread-local cache without locking or allocating.
//
// Resolution is single-flight: threads asking for the same new key wait for
// the one resolving it; different keys resolve in parallel, and no global
// lock is held while a backend probes, loads or builds.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/tuning_decisions.hpp"
#include "dispatcher/api_call_key.hpp"
#include "dispatcher/backend.hpp"
#include "dispatcher/c_api/c_enum.hpp"
#include "dispatcher/rules/call_rules.hpp"
#include "dispatcher/settings.hpp"

namespace convjit {

// The outcome of resolving one key.
struct Resolution {
  OpDescriptor desc;
  std::unique_ptr<Kernel> kernel;
  std::string_view backend;  // static name of the backend that serves it
  std::string variant;       // which of its variants, where the backend names it
  std::string reason;        // why the chain stopped there
  // A backend earlier in the chain declined: a rescan may find it now
  // (say, a tuned library added to the cache since).
  bool rescannable = false;
};

struct DispatchKey {
  OpDescriptor desc;
  std::int32_t device_kind = 0;
  std::int32_t device_ordinal = 0;
  std::int32_t policy = 0;
  std::int32_t rules_epoch = 0;  // SettingsStore::rules_epoch(); also keeps the key free of padding
  friend bool operator==(const DispatchKey&, const DispatchKey&) = default;
};
static_assert(std::has_unique_object_representations_v<DispatchKey>);

struct DispatchKeyHash {
  std::size_t operator()(const DispatchKey& key) const;
};

class Dispatcher {
 public:
  // The process-wide dispatcher with the default chain (never destroyed:
  // tuned libraries are unloaded by their own atexit handler instead).
  static Dispatcher& instance();

  // The same chain without the tuned-library backend: what a pinned plan
  // (convjit_plan_create) and `convjit export` choose from.  The libraries
  // export writes sit in directories the tuned-library backend searches
  // and call back into convjit: resolving through it would recurse.
  static Dispatcher& without_tuned_libraries();

  explicit Dispatcher(std::vector<std::unique_ptr<Backend>> chain);

  // Runs a validated, concrete descriptor.  *backend receives the name of
  // the backend that served it.
  [[nodiscard]] Status execute(const OpDescriptor& desc, const convjit_device_t& device,
                               const ExecArgs& args, std::string_view* backend = nullptr);

  // The API's entry point.  A call whose raw arguments (`key`) were seen on
  // this thread runs straight away: no descriptor is built or validated, no
  // lock taken, nothing allocated.  Otherwise `describe()` builds the
  // validated descriptor (Result<OpDescriptor>) and the call is resolved.
  // `key` gains the device and policy.
  template <class Describe>
  [[nodiscard]] Status execute_call(ApiCallKey& key, const convjit_device_t& device,
                                    const ExecArgs& args, Describe&& describe,
                                    std::string_view* backend = nullptr) {
    const SettingsStore& settings = SettingsStore::instance();
    key.add(std::int64_t{raw_c_enum(device.kind)})  // not yet checked: C may pass any int
        .add(std::int64_t{device.ordinal})
        .add(static_cast<std::int64_t>(settings.policy()))
        .add(std::int64_t{settings.rules_epoch()});
    if (const Resolution* hit = cached_call(key)) return run(*hit, args, backend);
    auto desc = describe();
    if (!desc.is_ok()) return desc.status();
    auto resolved = resolve(desc.value(), device);
    if (!resolved.is_ok()) return resolved.status();
    remember_call(key, resolved.value());
    return run(*resolved.value(), args, backend);
  }

  // Resolves without executing (the first call of a key walks the chain).
  [[nodiscard]] Result<const Resolution*> resolve(const OpDescriptor& desc,
                                                  const convjit_device_t& device);

  // Decides as a first call would under the policy (a stored tuning
  // decision, a measurement under `tuned`, else the chain), logged and
  // recorded, but outside the table: the caller owns the kernel.
  [[nodiscard]] Result<Resolution> choose(const OpDescriptor& desc, const convjit_device_t& device);

  // Builds a kernel on the backend named `backend` (its variant `variant`;
  // "" is the backend's own choice), outside the table: the caller owns it.
  // NOT_AVAILABLE names the backends of this chain when none has that name.
  [[nodiscard]] Result<Resolution> build_pinned(const OpDescriptor& desc,
                                                const convjit_device_t& device,
                                                std::string_view backend, std::string_view variant);

  // The chain's backend names, in order.
  [[nodiscard]] std::vector<std::string_view> backend_names() const;

  // Forgets failed and rescannable outcomes, so their next call walks the
  // chain again.  Resolutions in use stay valid.
  void rescan();

 private:
  struct Entry;
  [[nodiscard]] const Resolution* cached_call(const ApiCallKey& key) const;
  void remember_call(const ApiCallKey& key, const Resolution* resolution);
  [[nodiscard]] static Status run(const Resolution& resolution, const ExecArgs& args,
                                  std::string_view* backend);
  using Traces = std::vector<std::pair<std::string_view, BuildTrace>>;
  using CallRules = rules::CallRules;
  [[nodiscard]] Result<Resolution> decide(const OpDescriptor& desc, const convjit_device_t& device,
                                          Policy policy);
  [[nodiscard]] Result<Resolution> decide_under_rules(const OpDescriptor& desc,
                                                      const convjit_device_t& device, Policy policy,
                                                      const CallRules* rules, Traces& traces);
  // The backend (and variant) a rule forces: the resolution, nullopt to
  // walk the chain instead (on_unavailable: fallback), or the error.
  [[nodiscard]] Result<std::optional<Resolution>> serve_forced(const OpDescriptor& desc,
                                                               const convjit_device_t& device,
                                                               Policy policy,
                                                               const CallRules& rules,
                                                               Traces& traces);
  [[nodiscard]] Result<Resolution> walk_chain(const OpDescriptor& desc,
                                              const convjit_device_t& device, Policy policy,
                                              const CallRules* rules, Traces& traces);
  // Where a descriptor's tuning decision is kept, found once per decision.
  struct StoredTuning {
    TuningDecisions decisions;
    TuningKey key;
  };
  [[nodiscard]] std::optional<Resolution> from_tuning_decision(const OpDescriptor& desc,
                                                              const convjit_device_t& device,
                                                              const StoredTuning& stored,
                                                              Traces& traces);
  [[nodiscard]] Result<Resolution> tune(const OpDescriptor& desc, const convjit_device_t& device,
                                        const StoredTuning& stored, const CallRules* rules,
                                        Traces& traces);
  [[nodiscard]] std::shared_ptr<Entry> claim_entry(const DispatchKey& key, bool& owner);

  const std::uint64_t id_;
  std::vector<std::unique_ptr<Backend>> chain_;
  std::atomic<std::uint64_t> generation_{0};  // bumped by rescan()
  std::mutex table_mutex_;  // guards table_ and retired_; never held while resolving
  std::unordered_map<DispatchKey, std::shared_ptr<Entry>, DispatchKeyHash> table_;
  // Entries dropped by rescan() stay alive: thread-local caches may still
  // point at their resolutions until they notice the new generation.
  std::vector<std::shared_ptr<Entry>> retired_;
};

}  // namespace convjit
