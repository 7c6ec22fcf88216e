#include "dispatcher/settings.hpp"

#include <fmt/format.h>
#include <pwd.h>
#include <unistd.h>

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <mutex>

#include "dispatcher/cuda/gpu_arch.hpp"
#include "dispatcher/observe/warnings.hpp"

namespace convjit {

namespace {

constexpr std::string_view kPolicyNames[] = {"auto",  "jit",     "cudnn", "reference",
                                             "tuned", "emulate", "onednn"};

// The first variable of `names` that is set, with its name.
std::optional<std::pair<std::string, std::string>> first_set(
    EnvLookup lookup, std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (const char* value = lookup(name); value != nullptr)
      return std::pair{name, std::string(value)};
  return std::nullopt;
}

void read_cache_path(EnvLookup lookup, Settings& s, std::vector<std::string>& warnings) {
  auto found = first_set(lookup, {"CONVJIT_CACHE_PATH", "DISTCONV_JIT_CACHEPATH"});
  if (found) {
    auto list = split_search_path(found->second);
    if (!list.empty()) {
      s.cache_path = {std::move(list), SettingSource::environment, found->first};
      return;
    }
    warnings.push_back(
        fmt::format("{} is set but lists no directory; using the default", found->first));
  }
  const std::string fallback = default_cache_directory(lookup);
  s.cache_path = {fallback.empty() ? std::vector<std::string>{} : std::vector{fallback},
                  SettingSource::default_value, "default"};
  if (fallback.empty())
    warnings.push_back(
        "no cache directory: neither XDG_CACHE_HOME nor a home directory is "
        "known; set CONVJIT_CACHE_PATH");
}

void read_local_cache_path(EnvLookup lookup, Settings& s, std::vector<std::string>& warnings) {
  s.local_cache_path = {default_local_cache_directory(lookup), SettingSource::default_value,
                        "default"};
  const char* value = lookup("CONVJIT_LOCAL_CACHE_PATH");
  if (value == nullptr) return;
  const std::string_view v(value);
  if (v == "none") {
    s.local_cache_path = {"", SettingSource::environment, "CONVJIT_LOCAL_CACHE_PATH"};
    return;
  }
  if (v.empty() || v.front() != '/') {
    warnings.push_back(fmt::format(
        "CONVJIT_LOCAL_CACHE_PATH='{}' is neither an absolute path nor 'none'; ignored (using "
        "{})",
        v, s.local_cache_path.value.empty() ? "no local tier" : s.local_cache_path.value));
    return;
  }
  s.local_cache_path = {std::string(v), SettingSource::environment, "CONVJIT_LOCAL_CACHE_PATH"};
}

void read_verbose(EnvLookup lookup, Settings& s, std::vector<std::string>& warnings) {
  auto found = first_set(lookup, {"CONVJIT_VERBOSE", "DISTCONV_JIT_VERBOSE"});
  if (!found) return;
  const std::string& v = found->second;
  if (v == "0" || v == "1" || v == "2") {
    s.verbose = {v[0] - '0', SettingSource::environment, found->first};
    return;
  }
  warnings.push_back(
      fmt::format("{}='{}' is not 0, 1 or 2; ignored (logging stays off)", found->first, v));
}

void read_path(EnvLookup lookup, const char* name, Setting<std::string>& target,
               std::vector<std::string>& warnings) {
  const char* value = lookup(name);
  if (value == nullptr) return;
  if (*value == '\0') {
    warnings.push_back(fmt::format("{} is set but empty; ignored", name));
    return;
  }
  target = {value, SettingSource::environment, name};
}

void read_arch(EnvLookup lookup, Settings& s, std::vector<std::string>& warnings) {
  const char* value = lookup("CONVJIT_ARCH");
  if (value == nullptr) return;
  if (is_valid_arch(value)) {
    s.arch = {value, SettingSource::environment, "CONVJIT_ARCH"};
    return;
  }
  warnings.push_back(
      fmt::format("CONVJIT_ARCH='{}' is not of the form sm_XX (e.g. sm_90); ignored", value));
}

void read_policy(EnvLookup lookup, Settings& s, std::vector<std::string>& warnings) {
  const char* value = lookup("CONVJIT_POLICY");
  if (value == nullptr) return;
  if (auto policy = parse_policy(value)) {
    s.policy = {*policy, SettingSource::environment, "CONVJIT_POLICY"};
    return;
  }
  warnings.push_back(fmt::format(
      "CONVJIT_POLICY='{}' is not one of auto, jit, cudnn, onednn, reference, tuned, emulate; "
      "ignored",
      value));
}

// A 0-or-1 variable into `setting`; any other value is ignored, the
// warning saying what stays (`otherwise`).
void read_flag(EnvLookup lookup, const char* name, Setting<bool>& setting,
               std::string_view otherwise, std::vector<std::string>& warnings) {
  const char* value = lookup(name);
  if (value == nullptr) return;
  const std::string_view v(value);
  if (v == "0" || v == "1") {
    setting = {v == "1", SettingSource::environment, name};
    return;
  }
  warnings.push_back(fmt::format("{}='{}' is not 0 or 1; ignored ({})", name, value, otherwise));
}

void read_cudnn_workspace_limit(EnvLookup lookup, Settings& s, std::vector<std::string>& warnings) {
  const char* value = lookup("CONVJIT_CUDNN_WORKSPACE_LIMIT");
  if (value == nullptr) return;
  const std::string_view v(value);
  std::size_t mib = 0;
  const auto [end, error] = std::from_chars(v.data(), v.data() + v.size(), mib);
  constexpr std::size_t kMaxMib = std::size_t{1} << 40;  // keeps mib << 20 in range
  if (v.empty() || error != std::errc() || end != v.data() + v.size() || mib > kMaxMib) {
    warnings.push_back(fmt::format(
        "CONVJIT_CUDNN_WORKSPACE_LIMIT='{}' is not a whole number of MiB; ignored (the limit "
        "stays {} MiB)",
        value, kDefaultCudnnWorkspaceLimitMib));
    return;
  }
  s.cudnn_workspace_limit_mib = {mib, SettingSource::environment, "CONVJIT_CUDNN_WORKSPACE_LIMIT"};
}

void read_rules_files(EnvLookup lookup, Settings& s, std::vector<std::string>& warnings) {
  const char* value = lookup("CONVJIT_RULES");
  if (value == nullptr) return;
  auto files = split_search_path(value);
  if (files.empty()) {
    warnings.push_back("CONVJIT_RULES is set but names no file; ignored");
    return;
  }
  s.rules_files = {std::move(files), SettingSource::environment, "CONVJIT_RULES"};
}

}  // namespace

std::string_view policy_name(Policy policy) { return kPolicyNames[static_cast<int>(policy)]; }

std::optional<Policy> parse_policy(std::string_view text) {
  for (std::size_t i = 0; i < std::size(kPolicyNames); ++i)
    if (kPolicyNames[i] == text) return static_cast<Policy>(i);
  return std::nullopt;
}

std::string_view source_name(SettingSource source) {
  switch (source) {
    case SettingSource::default_value:
      return "default";
    case SettingSource::environment:
      return "env";
    case SettingSource::api:
      return "api";
  }
  return "?";
}

std::vector<std::string> split_search_path(std::string_view list) {
  std::vector<std::string> entries;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t end = std::min(list.find(':', start), list.size());
    if (end > start) entries.emplace_back(list.substr(start, end - start));
    start = end + 1;
  }
  return entries;
}

std::string default_cache_directory(EnvLookup lookup) {
  if (const char* xdg = lookup("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/')
    return std::string(xdg) + "/convjit";
  const char* home = lookup("HOME");
  if (home == nullptr || *home == '\0') {
    const passwd* entry = getpwuid(geteuid());
    home = entry ? entry->pw_dir : nullptr;
  }
  if (home == nullptr || *home == '\0') return {};
  return std::string(home) + "/.cache/convjit";
}

std::string default_local_cache_directory(EnvLookup lookup) {
  const std::string user = fmt::format("convjit-{}", ::geteuid());
  if (const char* tmpdir = lookup("TMPDIR"); tmpdir != nullptr && *tmpdir == '/')
    return std::string(tmpdir) + "/" + user;
  if (std::error_code error; std::filesystem::is_directory("/dev/shm", error))
    return "/dev/shm/" + user;
  return {};
}

Settings settings_from_environment(EnvLookup lookup, std::vector<std::string>& warnings) {
  Settings s;
  read_cache_path(lookup, s, warnings);
  read_local_cache_path(lookup, s, warnings);
  read_verbose(lookup, s, warnings);
  read_path(lookup, "CONVJIT_LOG_FILE", s.log_file, warnings);
  read_path(lookup, "CONVJIT_RECORD", s.record_file, warnings);
  read_policy(lookup, s, warnings);
  read_arch(lookup, s, warnings);
  read_flag(lookup, "CONVJIT_ALLOW_TF32", s.allow_tf32, "f32 stays off TF32", warnings);
  read_cudnn_workspace_limit(lookup, s, warnings);
  read_rules_files(lookup, s, warnings);
  read_flag(lookup, "CONVJIT_WGMMA_TMA_STORE", s.wgmma_tma_store, "the Hopper conv stores by TMA",
            warnings);
  read_flag(lookup, "CONVJIT_WGMMA_STREAM_K", s.wgmma_stream_k,
            "the Hopper conv's ping-pong grids keep whole tiles", warnings);
  read_flag(lookup, "CONVJIT_WGMMA_CLUSTER_SUMS", s.wgmma_cluster_sums,
            "the Hopper bwdfilt's clusters add its slices", warnings);
  return s;
}

// ---- SettingsStore ----------------------------------------------------------

struct SettingsStore::Overrides {
  std::mutex mutex;
  Settings environment;
  std::optional<std::vector<std::string>> cache_path;
  std::optional<std::string> local_cache_path;
  std::optional<int> verbose;
  std::optional<std::string> log_file, record_file;
  std::optional<Policy> policy;
  std::optional<std::string> arch;
  std::optional<bool> allow_tf32;
  std::optional<std::vector<std::string>> rules_files;
  std::atomic<std::shared_ptr<const Settings>> published;
};

const char* process_environment(const char* name) { return std::getenv(name); }

namespace {
template <class T>
void apply(Setting<T>& target, const std::optional<T>& value, const char* origin) {
  if (value) target = {*value, SettingSource::api, origin};
}
}  // namespace

SettingsStore::SettingsStore() : overrides_(std::make_shared<Overrides>()) { reload_environment(); }

std::shared_ptr<const Settings> SettingsStore::snapshot() const {
  return overrides_->published.load();
}

void SettingsStore::reload_environment() {
  std::vector<std::string> warnings;
  Settings fresh = settings_from_environment(process_environment, warnings);
  for (const auto& warning : warnings) warn_once(warning);
  std::lock_guard lock(overrides_->mutex);
  overrides_->environment = std::move(fresh);
  publish();
}

// Caller holds overrides_->mutex.
void SettingsStore::publish() {
  Overrides& o = *overrides_;
  auto s = std::make_shared<Settings>(o.environment);
  apply(s->cache_path, o.cache_path, "convjit_set_cache_path");
  apply(s->local_cache_path, o.local_cache_path, "convjit_set_local_cache_path");
  apply(s->verbose, o.verbose, "convjit_set_verbose");
  apply(s->log_file, o.log_file, "convjit_set_log_file");
  apply(s->record_file, o.record_file, "convjit_set_record_file");
  apply(s->policy, o.policy, "convjit_set_policy");
  apply(s->arch, o.arch, "convjit_set_arch");
  apply(s->allow_tf32, o.allow_tf32, "convjit_set_allow_tf32");
  apply(s->rules_files, o.rules_files, "convjit_set_rules_file");
  const auto previous = o.published.load();
  if (!previous || previous->rules_files.value != s->rules_files.value)
    rules_epoch_.fetch_add(1, std::memory_order_relaxed);
  verbose_level_.store(s->verbose.value, std::memory_order_relaxed);
  policy_.store(static_cast<int>(s->policy.value), std::memory_order_relaxed);
  o.published.store(std::move(s));
}

void SettingsStore::set_cache_path(std::optional<std::string> list) {
  std::lock_guard lock(overrides_->mutex);
  overrides_->cache_path.reset();
  if (list) overrides_->cache_path = split_search_path(*list);
  publish();
}

void SettingsStore::set_local_cache_path(std::optional<std::string> path) {
  std::lock_guard lock(overrides_->mutex);
  overrides_->local_cache_path = std::move(path);
  publish();
}

void SettingsStore::set_verbose(std::optional<int> level) {
  std::lock_guard lock(overrides_->mutex);
  overrides_->verbose = level;
  publish();
}

void SettingsStore::set_log_file(std::optional<std::string> path) {
  std::lock_guard lock(overrides_->mutex);
  overrides_->log_file = std::move(path);
  publish();
}

void SettingsStore::set_record_file(std::optional<std::string> path) {
  std::lock_guard lock(overrides_->mutex);
  overrides_->record_file = std::move(path);
  publish();
}

void SettingsStore::set_arch(std::optional<std::string> arch) {
  std::lock_guard lock(overrides_->mutex);
  overrides_->arch = std::move(arch);
  publish();
}

void SettingsStore::set_policy(std::optional<Policy> policy) {
  std::lock_guard lock(overrides_->mutex);
  overrides_->policy = policy;
  publish();
}

void SettingsStore::set_allow_tf32(std::optional<bool> allow) {
  std::lock_guard lock(overrides_->mutex);
  overrides_->allow_tf32 = allow;
  publish();
}

void SettingsStore::set_rules_files(std::optional<std::string> list) {
  std::lock_guard lock(overrides_->mutex);
  overrides_->rules_files.reset();
  if (list) overrides_->rules_files = split_search_path(*list);
  publish();
}

}  // namespace convjit
