// `convjit preload`: compiles the JIT kernels of a record file or a built-in
// model into the persistent cache ahead of a run, in parallel; with --mpi,
// once per job across its ranks (dispatcher/preload/collective_preload.hpp).
#include <fmt/format.h>
#include <unistd.h>

#include <fmt/ranges.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "cache/cache_tiers.hpp"
#include "cli_status.hpp"
#include "command.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/jit/nvrtc_library.hpp"
#include "dispatcher/cuda/gpu_arch.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/preload/collective_preload.hpp"
#include "dispatcher/settings.hpp"
#include "integer_flags.hpp"
#include "model_flags.hpp"
#include "record_file.hpp"
#include "mpi_session.hpp"

namespace convjit::cli {

namespace {

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

// What one rank prints: its compiles as they finish, then its node's tier;
// rank 0 the job's summary.
class PreloadOutput {
 public:
  PreloadOutput(bool json, int rank, int ranks)
      : json_(json), rank_(rank), ranks_(ranks), tty_(ranks == 1 && ::isatty(STDOUT_FILENO) != 0) {}

  void compiled(const PreloadEvent& event) {
    ++done_;
    if (json_) return;
    const char* word = event.ok ? "compiled" : "failed";
    if (tty_) {
      fmt::print("\r{} compiled {:<8} {:.60}", done_, word, event.name);
      std::fflush(stdout);
      return;
    }
    fmt::print("{}{:<11} {:8.1f} ms  {}\n", prefix(), word, event.ms, event.name);
    std::fflush(stdout);
  }

  [[nodiscard]] std::string prefix() const {
    return ranks_ > 1 ? fmt::format("rank {}: ", rank_) : std::string();
  }
  [[nodiscard]] bool tty() const { return tty_ && done_ > 0; }

 private:
  bool json_;
  int rank_, ranks_;
  bool tty_;
  int done_ = 0;
};

class PreloadCommand final : public Command {
 public:
  explicit PreloadCommand(CLI::App& app) {
    command_ = app.add_subcommand("preload", "Compile JIT kernels into the cache ahead of a run");
    command_->add_option("record", manifest_,
                         "a record file written with CONVJIT_RECORD (JSON lines)");
    model_.add_to(*command_);
    command_->add_option("--arch", arch_, "GPU architecture, e.g. sm_90 (default: CONVJIT_ARCH)");
    command_->add_flag("--every-variant", every_variant_,
                       "every JIT variant of each op (what the tuned policy and convjit bench "
                       "time), not only the auto policy's");
    command_->add_flag("--json", json_, "print one JSON summary instead of progress and lines");
    add_integer_flag(*command_, "--jobs", jobs_, "parallel compiles (per node leader with --mpi)",
                     {1, 256});
    command_->add_flag("--mpi", mpi_,
                       "run as one rank of an MPI job (under mpirun): each kernel is compiled "
                       "once in the job, node leaders fill their node-local tiers, rank 0 the "
                       "shared one");
    add_integer_flag(*command_, "--ranks-per-node", ranks_per_node_,
                     "with --mpi: every N consecutive ranks form a node (default: the ranks "
                     "that share memory)",
                     {1, 1 << 20});
    command_->footer(
        "Examples:\n"
        "  convjit preload --model yolo11n --arch sm_90\n"
        "  convjit preload --model resnet50 --batch 32 --layout nhwc --dtype bf16 --arch sm_90 "
        "--every-variant\n"
        "  CONVJIT_RECORD=run.jsonl ./trainer && convjit preload run.jsonl --arch sm_90 --jobs 8\n"
        "  mpirun -np 64 convjit preload run.jsonl --arch sm_90 --mpi");
  }

  [[nodiscard]] const std::string& name() const override { return command_->get_name(); }
  [[nodiscard]] bool selected() const override { return command_->parsed(); }

  [[nodiscard]] int run() const override {
    if (manifest_.empty() == !model_.given())
      throw UsageError("give either a record file or --model NAME (not both)");
    if (ranks_per_node_ != 0 && !mpi_) throw UsageError("--ranks-per-node needs --mpi");
    const std::string arch = resolve_arch(arch_);
    // Without NVRTC nothing can be compiled: say so once, not once per descriptor.
    if (const Status& nvrtc = NvrtcLibrary::instance().available(); !nvrtc.is_ok())
      throw RuntimeError(nvrtc.message());
    std::optional<MpiSession> mpi;
    if (mpi_) mpi.emplace(ranks_per_node_);
    const convjit_communicator_t raw = mpi ? mpi->communicator() : single_process_communicator();
    const Communicator comm = Communicator::wrap(raw).value();
    const auto settings = SettingsStore::instance().snapshot();
    JitCache cache(jit_cache_tiers(*settings));
    PreloadRequest request;
    request.jobs = jobs_;
    std::vector<std::string> problems;
    request.setup = read_work(comm, cache, *settings, request.names, problems);
    if (every_variant_) request.names = with_every_variant(request.names, arch);
    if (!mpi && !request.setup.is_ok()) throw RuntimeError(request.setup.message());
    const auto compiler = nvrtc_preload_compiler(arch, cache.primary_directory());
    PreloadOutput output(json_, comm.rank(), comm.size());
    std::mutex printing;
    auto report = collective_preload(comm, cache, *compiler, request, [&](const PreloadEvent& e) {
      std::lock_guard lock(printing);
      output.compiled(e);
    });
    if (output.tty()) fmt::print("\n");
    if (!report.is_ok()) {
      fmt::print(stderr, "convjit preload: {}{}\n", output.prefix(), report.status().message());
      return kExitRuntime;
    }
    PreloadReport& r = report.value();
    r.failed += problems.size();
    problems.insert(problems.end(), r.problems.begin(), r.problems.end());
    if (json_) return print_json(arch, r, problems, comm);
    return print_text(arch, r, problems, output.prefix(), comm);
  }

 private:
  // This rank's descriptors; a failure to read them is told to every rank.
  Status read_work(const Communicator& comm, const JitCache& cache, const Settings& settings,
                   std::vector<std::string>& names, std::vector<std::string>& problems) const {
    if (comm.rank() == 0 && cache.writable_directory().empty())
      return Status::not_available(
          fmt::format("no writable cache directory in {}; set CONVJIT_CACHE_PATH to one you own",
                      fmt::join(settings.cache_path.value, ":")));
    try {
      names = collect(problems);
    } catch (const std::exception& e) {
      // Alone, the error is reported as it is (a usage error exits 2); in a
      // job, the other ranks must hear of it instead of waiting for this one.
      if (comm.size() == 1 && !mpi_) throw;
      return Status::not_available(e.what());
    }
    return Status::ok();
  }

  int print_json(const std::string& arch, const PreloadReport& r,
                 const std::vector<std::string>& problems, const Communicator& comm) const {
    nlohmann::json leaders = nlohmann::json::array();
    for (const auto& [rank, compiles] : r.compiled_by_leader)
      leaders.push_back({{"rank", rank}, {"compiled", compiles}});
    const nlohmann::json out{{"arch", arch},
                             {"rank", comm.rank()},
                             {"ranks", r.ranks},
                             {"nodes", r.nodes},
                             {"descriptors", r.distinct},
                             {"requested", r.requested},
                             {"seconds", r.seconds},
                             {"compiled", r.compiled},
                             {"cached", r.cached + r.copied_from_shared + r.copied_from_node},
                             {"copied_from_shared", r.copied_from_shared},
                             {"copied_from_node", r.copied_from_node},
                             {"unsupported", r.unsupported},
                             {"failed", r.failed},
                             {"problems", problems},
                             {"compiled_here", r.compiled_here},
                             {"compiled_by_leader", leaders},
                             {"local_cache", r.local_tier},
                             {"local_entries", r.local_entries},
                             {"cache", r.shared_tier}};
    fmt::print("{}\n", out.dump(2));
    return problems.empty() ? kExitOk : kExitRuntime;
  }

  int print_text(const std::string& arch, const PreloadReport& r,
                 const std::vector<std::string>& problems, const std::string& prefix,
                 const Communicator& comm) const {
    if (comm.size() > 1)
      fmt::print("{}{} compiled here; {} entries load from {}\n", prefix, r.compiled_here,
                 r.local_entries, r.local_tier.empty() ? "the shared tier" : r.local_tier);
    if (comm.rank() != 0) return problems.empty() ? kExitOk : kExitRuntime;
    const std::string job =
        comm.size() > 1 ? fmt::format("{} ranks on {} nodes, ", r.ranks, r.nodes) : "";
    fmt::print(
        "preload: {}{} descriptors for {} in {:.1f} s: {} compiled, {} already cached, {} "
        "unsupported, {} failed\n",
        job, r.distinct, arch, r.seconds, r.compiled,
        r.cached + r.copied_from_shared + r.copied_from_node, r.unsupported, r.failed);
    if (comm.size() > 1) {
      std::vector<std::string> leaders;
      for (const auto& [rank, compiles] : r.compiled_by_leader)
        leaders.push_back(fmt::format("rank {} {}", rank, compiles));
      fmt::print("compiles by node leader: {}; copied {} from the shared tier, {} between nodes\n",
                 fmt::join(leaders, ", "), r.copied_from_shared, r.copied_from_node);
    }
    fmt::print("cache: {}\n", r.shared_tier);
    if (!r.local_tier.empty())
      fmt::print("local tier: {} ({} entries)\n", r.local_tier, r.local_entries);
    for (const auto& p : problems) fmt::print(stderr, "convjit preload: failed: {}\n", p);
    return problems.empty() ? kExitOk : kExitRuntime;
  }

  std::vector<std::string> collect(std::vector<std::string>& problems) const {
    std::vector<std::string> work;
    if (!manifest_.empty()) {
      work = read_record_file(manifest_, problems);
    } else {
      for (const ModelOp& op : model_.expand()) work.push_back(descriptor_name(op.desc));
    }
    return work;
  }

  // Each name as name@variant for every variant the JIT offers on `arch`;
  // a name the JIT does not serve stays as it is, to be reported so.
  static std::vector<std::string> with_every_variant(const std::vector<std::string>& names,
                                                     const std::string& arch) {
    std::vector<std::string> out;
    for (const std::string& name : names) {
      auto desc = parse_descriptor_name(name);
      if (!desc.is_ok() || !jit_supports(desc.value()).is_ok()) {
        out.push_back(name);
        continue;
      }
      for (const std::string& id : jit_variants(desc.value(), variant_context(arch)))
        out.push_back(name + kPreloadVariantSeparator + id);
    }
    return out;
  }

  CLI::App* command_ = nullptr;
  std::string manifest_;
  ModelFlags model_;
  std::string arch_;
  bool every_variant_ = false;
  bool json_ = false;
  bool mpi_ = false;
  int ranks_per_node_ = 0;
  int jobs_ = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

}  // namespace

std::unique_ptr<Command> make_preload_command(CLI::App& app) {
  return std::make_unique<PreloadCommand>(app);
}

}  // namespace convjit::cli
