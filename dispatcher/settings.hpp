// All of convjit's settings in one place: environment variables, read once,
// overridden by API setters.  See the README's environment-variable table.
//
//   CONVJIT_CACHE_PATH   ':'-separated search list (alias DISTCONV_JIT_CACHEPATH)
//   CONVJIT_LOCAL_CACHE_PATH  the node-local JIT tier: an absolute path, or none
//   CONVJIT_VERBOSE      0 off, 1 decisions, 2 plus executions (alias DISTCONV_JIT_VERBOSE)
//   CONVJIT_LOG_FILE     log destination (default stderr)
//   CONVJIT_RECORD       JSON-lines file recording each distinct descriptor
//   CONVJIT_POLICY       auto | jit | cudnn | onednn | reference | tuned | emulate
//   CONVJIT_ARCH         sm_XX to compile JIT kernels for when no GPU says it
//   CONVJIT_ALLOW_TF32   1 lets cuDNN run f32 convolutions on TF32 tensor cores
//   CONVJIT_RULES        ':'-separated rules files, applied in order
//   CONVJIT_WGMMA_TMA_STORE  0 keeps the Hopper conv's tiles on the threads' store
//   CONVJIT_WGMMA_STREAM_K   1 lets the Hopper conv's ping-pong grids run Stream-K
//   CONVJIT_WGMMA_CLUSTER_SUMS  0 has the Hopper bwdfilt's slices summed by a second pass
//
// Parsing is strict: "0" means off (LBANN treats any value as on), and an
// invalid value is reported once on stderr, naming the variable, and ignored.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace convjit {

enum class Policy { automatic, jit, cudnn, reference, tuned, emulate, onednn };

[[nodiscard]] std::string_view policy_name(Policy policy);
[[nodiscard]] std::optional<Policy> parse_policy(std::string_view text);

// Where a setting's value came from, for `convjit doctor` and the log header.
enum class SettingSource { default_value, environment, api };

[[nodiscard]] std::string_view source_name(SettingSource source);

// 1 GiB: more than any cuDNN algorithm needs for the reference models'
// layers at batch 256, and small beside a training GPU's memory.
constexpr std::size_t kDefaultCudnnWorkspaceLimitMib = 1024;

template <class T>
struct Setting {
  T value{};
  SettingSource source = SettingSource::default_value;
  std::string origin;  // the variable or API call that set it
};

struct Settings {
  Setting<std::vector<std::string>> cache_path;
  // The node-local tier of the JIT cache, searched before cache_path; empty:
  // none (CONVJIT_LOCAL_CACHE_PATH=none, or no default place exists).
  Setting<std::string> local_cache_path;
  Setting<int> verbose;
  Setting<std::string> log_file;
  Setting<std::string> record_file;
  Setting<Policy> policy{Policy::automatic, SettingSource::default_value, "default"};
  Setting<std::string> arch;  // empty: take it from the GPU
  Setting<bool> allow_tf32;   // f32 on TF32 tensor cores (cuDNN); read when a kernel is built
  // The most workspace one cuDNN algorithm may take, in MiB; read when a kernel is built.
  Setting<std::size_t> cudnn_workspace_limit_mib{kDefaultCudnnWorkspaceLimitMib,
                                                 SettingSource::default_value, "default"};
  // Rules files (dispatcher/rules/rule_set.hpp), applied in order.
  Setting<std::vector<std::string>> rules_files;
  // The Hopper conv stores a tile by TMA where it can (wgmma_conv.hpp);
  // off, by its threads: a developer's switch, so that a GPU times the two
  // side by side.  Read when a kernel is built.
  Setting<bool> wgmma_tma_store{true, SettingSource::default_value, "default"};
  // On, the Hopper conv's ping-pong grids cut the tiles' K steps evenly
  // among their blocks (Stream-K) where whole tiles would leave SMs idle
  // (wgmma_conv.hpp).  Off by default: on ResNet-50's and YOLO11n's
  // convs the analyser predicts the parts' f32 sums cost more than the
  // balance saves (bench/results/2026-12-06-stream-k); a developer's
  // switch, so that a GPU times the two side by side.  Read when a kernel
  // is built.
  Setting<bool> wgmma_stream_k{false, SettingSource::default_value, "default"};
  // On, a Hopper bwdfilt of 2 to 8 slices adds them in each tile's cluster
  // (distributed shared memory); off, in a second pass over partial sums
  // in the workspace, as before.  A developer's switch, so that a GPU
  // times the two side by side.  Read when a kernel is built.
  Setting<bool> wgmma_cluster_sums{true, SettingSource::default_value, "default"};
};

// Reads settings from an environment lookup (getenv in production).
// Problems (invalid values) are appended to `warnings`.
using EnvLookup = const char* (*)(const char*);
// The process's environment (std::getenv) as an EnvLookup.
[[nodiscard]] const char* process_environment(const char* name);
[[nodiscard]] Settings settings_from_environment(EnvLookup lookup,
                                                 std::vector<std::string>& warnings);

// The default cache directory: $XDG_CACHE_HOME/convjit, else
// $HOME/.cache/convjit (the passwd entry if HOME is unset); never /tmp.
[[nodiscard]] std::string default_cache_directory(EnvLookup lookup);

// The node-local tier's default: $TMPDIR/convjit-<uid> when TMPDIR is an
// absolute path (schedulers point it at node-local scratch), else
// /dev/shm/convjit-<uid> where /dev/shm exists; empty when neither does.
[[nodiscard]] std::string default_local_cache_directory(EnvLookup lookup);

// Splits a ':'-separated list, dropping empty entries.
[[nodiscard]] std::vector<std::string> split_search_path(std::string_view list);

// The process-wide settings: the environment, read on first use, with API
// overrides applied.  Snapshots are immutable and cheap to share.
class SettingsStore {
 public:
  static SettingsStore& instance() {
    static SettingsStore store;  // inline: the hot path reads policy() through it
    return store;
  }

  [[nodiscard]] std::shared_ptr<const Settings> snapshot() const;

  // Lock-free copies of the two settings the hot path reads.
  [[nodiscard]] int verbose_level() const { return verbose_level_.load(std::memory_order_relaxed); }
  [[nodiscard]] Policy policy() const {
    return static_cast<Policy>(policy_.load(std::memory_order_relaxed));
  }
  // Bumped whenever the rules files change: part of every dispatch key, so
  // calls resolved under other rules resolve again.
  [[nodiscard]] std::int32_t rules_epoch() const {
    return rules_epoch_.load(std::memory_order_relaxed);
  }

  // nullopt restores the environment's (or the default) value.
  void set_cache_path(std::optional<std::string> list);
  // An absolute path, or "" for no local tier.
  void set_local_cache_path(std::optional<std::string> path);
  void set_verbose(std::optional<int> level);
  void set_log_file(std::optional<std::string> path);
  void set_record_file(std::optional<std::string> path);
  void set_policy(std::optional<Policy> policy);
  void set_arch(std::optional<std::string> arch);
  void set_allow_tf32(std::optional<bool> allow);
  // A ':'-separated list of rules files; nullopt restores CONVJIT_RULES.
  void set_rules_files(std::optional<std::string> list);

  // Re-reads the environment, keeping API overrides (tests, long-lived hosts).
  void reload_environment();

 private:
  SettingsStore();
  struct Overrides;
  void publish();

  std::shared_ptr<Overrides> overrides_;
  std::atomic<int> verbose_level_{0};
  std::atomic<int> policy_{0};
  std::atomic<std::int32_t> rules_epoch_{0};
};

}  // namespace convjit
