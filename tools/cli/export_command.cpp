// `convjit export --dace DIR`: the libraries DiHydrogen's DaCe dispatcher
// loads (lbann/dace_export.hpp), from what an LBANN run missed (its verbose
// log), what a convjit run recorded, or a built-in model.
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "cache/cache_directories.hpp"
#include "cache/code_trust.hpp"
#include "cli_status.hpp"
#include "command.hpp"
#include "companion_library.hpp"
#include "dispatcher/cuda/cuda_driver.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/settings.hpp"
#include "lbann/dace_export.hpp"
#include "lbann/lbann_log.hpp"
#include "model_flags.hpp"
#include "record_file.hpp"

namespace convjit::cli {

namespace {

std::atomic<bool> g_interrupted{false};
extern "C" void note_interrupt(int) { g_interrupted.store(true); }

// SIGINT and SIGTERM end the export between two libraries.
class InterruptBetweenLibraries {
 public:
  InterruptBetweenLibraries() {
    previous_int_ = std::signal(SIGINT, note_interrupt);
    previous_term_ = std::signal(SIGTERM, note_interrupt);
  }
  ~InterruptBetweenLibraries() {
    std::signal(SIGINT, previous_int_);
    std::signal(SIGTERM, previous_term_);
  }
  InterruptBetweenLibraries(const InterruptBetweenLibraries&) = delete;
  InterruptBetweenLibraries& operator=(const InterruptBetweenLibraries&) = delete;

 private:
  void (*previous_int_)(int) = SIG_DFL;
  void (*previous_term_)(int) = SIG_DFL;
};

// The shim for `device`, where the CLI's companion libraries are.
std::string shim_path(convjit_device_kind_t device) {
  const std::string file = device == CONVJIT_DEVICE_CUDA ? "libconvjit_dace_cuda.so"
                                                         : "libconvjit_dace_host.so";
  std::vector<std::string> tried;
  std::error_code error;
  for (const auto& place : companion_library_places(file)) {
    if (std::filesystem::is_regular_file(place, error)) return place.string();
    tried.push_back(place.parent_path().string());
  }
  throw RuntimeError(fmt::format("cannot find {} in {}; reinstall convjit", file,
                                 fmt::join(tried, ", ")));
}

// Where the copies of `shim` will find libconvjit: beside the shim, as the
// build and the install place them.
std::string libconvjit_directory(const std::string& shim) {
  std::error_code error;
  const auto directory = std::filesystem::canonical(std::filesystem::path(shim).parent_path(), error);
  if (error || !std::filesystem::exists(directory / "libconvjit.so.0", error))
    throw RuntimeError(fmt::format("no libconvjit.so.0 beside {}; reinstall convjit", shim));
  return directory.string();
}

void prepare_directory(const std::string& directory) {
  std::error_code error;
  if (!std::filesystem::exists(directory, error) && !make_private_directories(directory))
    throw RuntimeError(fmt::format("cannot create --dace {}: {}", directory, std::strerror(errno)));
  if (!std::filesystem::is_directory(directory, error))
    throw UsageError(fmt::format("--dace {} is not a directory", directory));
  if (Status s = check_directory_trust(directory); !s.is_ok())
    throw RuntimeError(fmt::format("--dace: {}", s.message()));
  if (::access(directory.c_str(), W_OK) != 0)
    throw RuntimeError(fmt::format("--dace {} is not writable by you; pass a directory you own",
                                   directory));
}

const char* kind_word(DaceExportOutcome::Kind kind) {
  switch (kind) {
    case DaceExportOutcome::Kind::written:
      return "written";
    case DaceExportOutcome::Kind::kept:
      return "kept";
    case DaceExportOutcome::Kind::skipped:
      return "skipped";
    case DaceExportOutcome::Kind::failed:
      return "failed";
  }
  return "?";
}

class ExportCommand final : public Command {
 public:
  explicit ExportCommand(CLI::App& app) {
    command_ = app.add_subcommand(
        "export", "Write libraries another framework loads: LBANN's DaCe kernels (--dace DIR)");
    command_->add_option("--dace", directory_,
                         "write lib<descriptor>.so files in DiHydrogen's DaCe ABI into DIR (LBANN's "
                         "DISTCONV_JIT_CACHEPATH)")
        ->required();
    command_->add_option("--lbann-log", logs_,
                         "an LBANN run's stderr with DISTCONV_JIT_VERBOSE set: its \"JIT-compiled "
                         "convolution not found\" lines (repeatable)");
    command_->add_option("--record", records_, "a record file written with CONVJIT_RECORD");
    model_.add_to(*command_);
    command_->add_flag("--symbolic-batch", symbolic_,
                       "symbolic-batch libraries (B) for concrete descriptors too");
    command_->add_option("--device", device_, "where the libraries run (default cuda)")
        ->check(CLI::IsMember({"cuda", "host"}));
    command_->add_option("--backend", backend_,
                         "pin this backend (jit, cudnn, onednn, reference); default: the tuned "
                         "policy's measurement on a GPU, else the auto policy's choice");
    command_->add_flag("--force", force_, "replace libraries that exist");
    command_->add_flag("--json", json_, "machine-readable output");
    command_->footer(
        "The batch (--batch) is where symbolic-batch libraries are chosen and preloaded: LBANN's\n"
        "mini-batch per rank.\n"
        "Examples:\n"
        "  convjit export --dace $DISTCONV_JIT_CACHEPATH --lbann-log lbann.err --batch 32\n"
        "  convjit export --dace kernels --model resnet50 --batch 32\n"
        "  convjit export --dace kernels --record run.jsonl --device host");
  }

  [[nodiscard]] const std::string& name() const override { return command_->get_name(); }
  [[nodiscard]] bool selected() const override { return command_->parsed(); }

  [[nodiscard]] int run() const override {
    if (logs_.empty() && records_.empty() && !model_.given())
      throw UsageError("give --lbann-log FILE, --record FILE or --model NAME");
    std::vector<std::string> problems;
    const std::vector<std::string> names = collect(problems);
    DaceExportOptions options = export_options(names);
    prepare_directory(directory_);
    choose_policy(options);
    const InterruptBetweenLibraries interrupts;
    const auto outcomes = export_dace_libraries(names, options, &g_interrupted);
    const bool interrupted = g_interrupted.load();
    if (json_) {
      print_json(outcomes, problems, interrupted);
    } else {
      print_text(outcomes, problems, interrupted);
    }
    const bool failed = std::any_of(outcomes.begin(), outcomes.end(), [](const auto& o) {
      return o.kind == DaceExportOutcome::Kind::failed;
    });
    return failed || interrupted ? kExitRuntime : kExitOk;
  }

 private:
  // The inputs' descriptor names, distinct, in order.
  std::vector<std::string> collect(std::vector<std::string>& problems) const {
    std::vector<std::string> names;
    std::set<std::string> seen;
    const auto add = [&](const std::string& name) {
      if (seen.insert(name).second) names.push_back(name);
    };
    for (const std::string& log : logs_) {
      LbannLogMisses misses = read_lbann_log(log);
      problems.insert(problems.end(), misses.problems.begin(), misses.problems.end());
      for (const std::string& name : misses.descriptors) add(name);
    }
    for (const std::string& record : records_)
      for (const std::string& name : read_record_file(record, problems)) add(name);
    if (model_.given())
      for (const ModelOp& op : model_.expand()) add(descriptor_name(op.desc));
    if (names.empty())
      throw RuntimeError(fmt::format("nothing to export{}{}", problems.empty() ? "" : ": ",
                                     fmt::join(problems, "; ")));
    return names;
  }

  DaceExportOptions export_options(const std::vector<std::string>& names) const {
    DaceExportOptions options;
    options.directory = directory_;
    options.device = device_ == "host" ? CONVJIT_DEVICE_HOST : CONVJIT_DEVICE_CUDA;
    options.shim_path = shim_path(options.device);
    options.runpath_placeholder = CONVJIT_DACE_RUNPATH_PLACEHOLDER;
    options.libconvjit_directory = libconvjit_directory(options.shim_path);
    options.backend = backend_;
    options.symbolic_batch = symbolic_;
    options.force = force_;
    if (command_->count("--batch") > 0) options.batch = model_.batch();
    const bool symbolic = symbolic_ || std::any_of(names.begin(), names.end(), [](const auto& n) {
                            auto d = parse_descriptor_name(n);
                            return d.is_ok() && d.value().symbolic_batch;
                          });
    if (symbolic && !options.batch)
      throw UsageError(
          "symbolic-batch libraries (LBANN's log names them so) are chosen and preloaded at one "
          "batch: pass --batch N, the mini-batch per rank");
    return options;
  }

  // With a GPU, the tuned policy measures each candidate, unless the user
  // set a policy or pinned a backend; on the host, auto decides.
  void choose_policy(const DaceExportOptions& options) const {
    if (options.device == CONVJIT_DEVICE_CUDA) {
      if (Status s = CudaDriver::instance().available(); !s.is_ok())
        throw RuntimeError(fmt::format(
            "--device cuda chooses and preloads each kernel on a GPU, and {}; run export on a "
            "GPU node, or pass --device host",
            s.message()));
    }
    const auto settings = SettingsStore::instance().snapshot();
    if (!backend_.empty() || settings->policy.source != SettingSource::default_value) return;
    if (options.device == CONVJIT_DEVICE_CUDA) SettingsStore::instance().set_policy(Policy::tuned);
  }

  void print_text(const std::vector<DaceExportOutcome>& outcomes,
                  const std::vector<std::string>& problems, bool interrupted) const {
    std::map<DaceExportOutcome::Kind, int> counts;
    for (const DaceExportOutcome& o : outcomes) {
      ++counts[o.kind];
      fmt::print("{:<8} {}\n         {}\n", kind_word(o.kind), o.library, o.detail);
    }
    for (const std::string& problem : problems) fmt::print(stderr, "convjit: warning: {}\n", problem);
    fmt::print("{}: {} written, {} kept, {} skipped, {} failed{}{}\n", directory_,
               counts[DaceExportOutcome::Kind::written], counts[DaceExportOutcome::Kind::kept],
               counts[DaceExportOutcome::Kind::skipped], counts[DaceExportOutcome::Kind::failed],
               problems.empty() ? "" : fmt::format("; {} input lines not understood", problems.size()),
               interrupted ? "; interrupted" : "");
  }

  void print_json(const std::vector<DaceExportOutcome>& outcomes,
                  const std::vector<std::string>& problems, bool interrupted) const {
    nlohmann::json libraries = nlohmann::json::array();
    for (const DaceExportOutcome& o : outcomes)
      libraries.push_back({{"library", o.library}, {"outcome", kind_word(o.kind)},
                           {"detail", o.detail}});
    const nlohmann::json out{{"directory", directory_}, {"libraries", libraries},
                             {"problems", problems}, {"interrupted", interrupted}};
    fmt::print("{}\n", out.dump(2));
  }

  CLI::App* command_ = nullptr;
  std::string directory_;
  std::vector<std::string> logs_;
  std::vector<std::string> records_;
  ModelFlags model_;
  bool symbolic_ = false;
  std::string device_ = "cuda";
  std::string backend_;
  bool force_ = false;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_export_command(CLI::App& app) {
  return std::make_unique<ExportCommand>(app);
}

}  // namespace convjit::cli
