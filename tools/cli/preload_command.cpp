// `convjit preload`: compiles the JIT kernels of a record file or a built-in
// model into the persistent cache ahead of a run, in parallel.
#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "cli_status.hpp"
#include "command.hpp"
#include "dispatcher/backends/jit/jit_module_cache.hpp"
#include "dispatcher/backends/jit/nvrtc_library.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/settings.hpp"
#include "integer_flags.hpp"
#include "model_flags.hpp"

namespace convjit::cli {

namespace {

enum class Outcome { compiled, cached, unsupported, failed };

struct Work {
  std::string name;
  OpDescriptor desc;
};

// Descriptors of a JSON-lines record file (CONVJIT_RECORD's format).
std::vector<Work> read_manifest(const std::string& path, std::vector<std::string>& problems) {
  if (std::error_code error; std::filesystem::is_directory(path, error))
    throw UsageError(fmt::format("{} is a directory; pass a record file written with "
                                 "CONVJIT_RECORD",
                                 path));
  std::ifstream in(path);
  if (!in) throw RuntimeError(fmt::format("cannot read the record file {}; check the path", path));
  std::vector<Work> work;
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto json = nlohmann::json::parse(line, nullptr, false);
    if (!json.is_object() || !json.contains("name") || !json["name"].is_string()) {
      problems.push_back(
          fmt::format("{}:{}: not a JSON object with a \"name\"", path, line_number));
      continue;
    }
    auto desc = parse_descriptor_name(json["name"].get<std::string>());
    if (!desc.is_ok()) {
      problems.push_back(fmt::format("{}:{}: {}", path, line_number, desc.status().message()));
      continue;
    }
    work.push_back({json["name"].get<std::string>(), desc.value()});
  }
  if (line_number == 0)
    throw RuntimeError(fmt::format(
        "the record file {} is empty; run the trainer with CONVJIT_RECORD={} first", path, path));
  return work;
}

std::string resolve_arch(const std::string& flag) {
  if (!flag.empty()) {
    if (!is_valid_arch(flag))
      throw UsageError(fmt::format("--arch {} is not of the form sm_XX (e.g. sm_90)", flag));
    return flag;
  }
  const auto settings = SettingsStore::instance().snapshot();
  if (!settings->arch.value.empty()) return settings->arch.value;
  throw UsageError(
      "no GPU to take the architecture from: pass --arch sm_XX (e.g. --arch sm_90) or set "
      "CONVJIT_ARCH");
}

class PreloadCommand final : public Command {
 public:
  explicit PreloadCommand(CLI::App& app) {
    command_ = app.add_subcommand("preload", "Compile JIT kernels into the cache ahead of a run");
    command_->add_option("record", manifest_,
                         "a record file written with CONVJIT_RECORD (JSON lines)");
    model_.add_to(*command_);
    command_->add_option("--arch", arch_, "GPU architecture, e.g. sm_90 (default: CONVJIT_ARCH)");
    command_->add_flag("--json", json_, "print one JSON summary instead of progress and lines");
    add_integer_flag(*command_, "--jobs", jobs_, "parallel compiles", {1, 256});
    command_->footer(
        "Examples:\n"
        "  convjit preload --model yolo11n --arch sm_90\n"
        "  CONVJIT_RECORD=run.jsonl ./trainer && convjit preload run.jsonl --arch sm_90 --jobs 8");
  }

  [[nodiscard]] const std::string& name() const override { return command_->get_name(); }
  [[nodiscard]] bool selected() const override { return command_->parsed(); }

  [[nodiscard]] int run() const override {
    const std::string arch = resolve_arch(arch_);
    // Without NVRTC nothing can be compiled: say so once, not once per descriptor.
    if (const Status& nvrtc = NvrtcLibrary::instance().available(); !nvrtc.is_ok())
      throw RuntimeError(nvrtc.message());
    std::vector<std::string> problems;
    const std::vector<Work> work = collect(problems);
    const auto settings = SettingsStore::instance().snapshot();
    JitCache cache(settings->cache_path.value);
    if (cache.writable_directory().empty())
      throw RuntimeError(
          fmt::format("no writable cache directory in {}; set CONVJIT_CACHE_PATH to one you own",
                      fmt::join(settings->cache_path.value, ":")));
    const auto start = std::chrono::steady_clock::now();
    std::array<std::atomic<int>, 4> counts{};
    counts[static_cast<int>(Outcome::failed)] = static_cast<int>(problems.size());
    std::mutex output;
    std::atomic<std::size_t> next{0};
    const bool tty = ::isatty(STDOUT_FILENO) != 0;
    auto worker = [&] {
      for (std::size_t i; (i = next.fetch_add(1)) < work.size();) {
        const auto item_start = std::chrono::steady_clock::now();
        auto prepared = prepare_jit_module(cache, work[i].desc, arch);
        const Outcome outcome =
            !prepared.is_ok()
                ? (prepared.status().code() == CONVJIT_STATUS_UNSUPPORTED ? Outcome::unsupported
                                                                          : Outcome::failed)
                : (prepared.value().compiled ? Outcome::compiled : Outcome::cached);
        ++counts[static_cast<int>(outcome)];
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - item_start)
                .count();
        std::lock_guard lock(output);
        if (outcome == Outcome::failed)
          problems.push_back(work[i].name + ": " + prepared.status().message());
        if (!json_) report(tty, i + 1, work.size(), outcome, work[i].name, ms);
      }
    };
    std::vector<std::thread> threads;
    for (int t = 0; t < jobs_; ++t) threads.emplace_back(worker);
    for (auto& t : threads) t.join();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (json_) {
      fmt::print("{}\n", nlohmann::json{{"arch", arch},
                                        {"descriptors", work.size()},
                                        {"seconds", seconds},
                                        {"compiled", counts[0].load()},
                                        {"cached", counts[1].load()},
                                        {"unsupported", counts[2].load()},
                                        {"failed", counts[3].load()},
                                        {"problems", problems},
                                        {"cache", cache.writable_directory()}}
                             .dump(2));
      return problems.empty() ? kExitOk : kExitRuntime;
    }
    if (tty) fmt::print("\n");
    fmt::print(
        "preload: {} descriptors for {} in {:.1f} s: {} compiled, {} already cached, {} "
        "unsupported, {} failed\n",
        work.size(), arch, seconds, counts[0].load(), counts[1].load(), counts[2].load(),
        counts[3].load());
    fmt::print("cache: {}\n", cache.writable_directory());
    for (const auto& p : problems) fmt::print(stderr, "convjit preload: failed: {}\n", p);
    return problems.empty() ? kExitOk : kExitRuntime;
  }

 private:
  std::vector<Work> collect(std::vector<std::string>& problems) const {
    if (manifest_.empty() == !model_.given())
      throw UsageError("give either a record file or --model NAME (not both)");
    std::vector<Work> work;
    if (!manifest_.empty()) {
      work = read_manifest(manifest_, problems);
    } else {
      for (const ModelOp& op : model_.expand()) work.push_back({descriptor_name(op.desc), op.desc});
    }
    std::set<std::string> seen;
    std::vector<Work> distinct;
    for (auto& w : work)
      if (seen.insert(w.name).second) distinct.push_back(std::move(w));
    return distinct;
  }

  static void report(bool tty, std::size_t done, std::size_t total, Outcome outcome,
                     const std::string& name, double ms) {
    static constexpr const char* kWords[] = {"compiled", "cached", "unsupported", "failed"};
    const char* word = kWords[static_cast<int>(outcome)];
    if (tty) {
      const int width = 30,
                filled = static_cast<int>(width * done / std::max<std::size_t>(total, 1));
      fmt::print("\r[{:<{}}] {}/{} {:<11} {:.60}",
                 std::string(static_cast<std::size_t>(filled), '#'), width, done, total, word,
                 name);
      std::fflush(stdout);
    } else {
      fmt::print("{:<11} {:8.1f} ms  {}\n", word, ms, name);
    }
  }

  CLI::App* command_ = nullptr;
  std::string manifest_;
  ModelFlags model_;
  std::string arch_;
  bool json_ = false;
  int jobs_ = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

}  // namespace

std::unique_ptr<Command> make_preload_command(CLI::App& app) {
  return std::make_unique<PreloadCommand>(app);
}

}  // namespace convjit::cli
