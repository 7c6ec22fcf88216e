// `convjit bench --model NAME`: every distinct op of a model's training step
// timed on each backend the device offers (the JIT and cuDNN on a GPU,
// oneDNN and the reference on the host), side by side in one run: the median time of
// every variant (the JIT's kernels, cuDNN's usable algorithms) and of the
// backend's best, the JIT's speedup over cuDNN, the achieved TFLOP/s
// (convolution) or GB/s (pooling, bias gradient) and the share of the
// roofline bound (analysis/op_roofline.hpp), and which backend and variant the
// policy serves it with; then a summary of the model's step per backend and
// on the policy's choices.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "analysis/bottleneck_model.hpp"
#include "analysis/op_roofline.hpp"
#include "bench_report.hpp"
#include "cli_status.hpp"
#include "command.hpp"
#include "dispatcher/backends/cudnn/cudnn_backend.hpp"
#include "dispatcher/backends/jit/jit_backend.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/onednn/onednn_backend.hpp"
#include "dispatcher/backends/onednn/onednn_library.hpp"
#include "dispatcher/backends/reference/reference_backend.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/operand_layout.hpp"
#include "dispatcher/settings.hpp"
#include "dispatcher/tuning/kernel_timing.hpp"
#include "integer_flags.hpp"
#include "model_flags.hpp"
#include "run_device.hpp"

namespace convjit::cli {

namespace {

using analysis::compute_peak_tflops;
using analysis::device_peaks;
using analysis::DevicePeaks;
using analysis::op_work;
using analysis::OpWork;
using analysis::roofline;
using analysis::Roofline;

// The backends compared on the device, each asked for every variant it
// offers (every usable cuDNN algorithm, say), so a column is its best.
std::vector<std::unique_ptr<Backend>> compared_backends(bool gpu) {
  std::vector<std::unique_ptr<Backend>> backends;
  if (gpu) {
    backends.push_back(std::make_unique<JitBackend>());
    backends.push_back(std::make_unique<CudnnBackend>());
  } else {
    if (OnednnLibrary::instance().available().is_ok())
      backends.push_back(std::make_unique<OnednnBackend>());
    backends.push_back(std::make_unique<ReferenceBackend>());
  }
  return backends;
}

// How often each distinct op runs in one step of the model.
std::map<std::string, long long> step_counts(const std::vector<ModelOp>& ops) {
  std::map<std::string, long long> counts;
  for (const ModelOp& op : ops) counts[descriptor_name(op.desc)] += op.count;
  return counts;
}

struct BenchOptions {
  int repetitions = 5;
  double time_limit_s = 0;  // > 0: measure no new op after this long
  bool json = false;
  std::string json_file;  // also write the JSON report here
  std::string predict_arch;  // also predict the JIT's auto variant on this architecture's GPUs
  std::string direction;     // when set, only the ops of this direction
  bool w_unchanged = false;  // every call promises w unchanged (convjit_exec_t::w_version)
};

class Bench {
 public:
  Bench(std::string model, const BenchOptions& options) : model_(std::move(model)), o_(options) {
    backends_ = compared_backends(device_.is_gpu());
    if (device_.is_gpu()) {
      gpu_name_ = CudaDriver::instance().name_of(0);
      peaks_ = device_peaks(gpu_name_);
    }
    if (!o_.predict_arch.empty())
      disassembler_.emplace(analysis::find_disassembler(process_environment));
  }

  nlohmann::json run(const std::vector<ModelOp>& ops) {
    std::mt19937 rng(2026);
    const std::map<std::string, long long> counts = step_counts(ops);
    std::set<std::string> seen;
    nlohmann::json rows = nlohmann::json::array();
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    const auto start = std::chrono::steady_clock::now();
    bool stopped = false;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (!in_direction(ops[i], o_.direction)) continue;
      if (!seen.insert(descriptor_name(ops[i].desc)).second) continue;
      if (o_.time_limit_s > 0 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
              o_.time_limit_s) {
        stopped = true;
        break;
      }
      if (tty)
        fmt::print(stderr, "\r[{}/{}] {:<40}", i + 1, ops.size(), ops[i].layer),
            std::fflush(stderr);
      rows.push_back(measure(ops[i], counts.at(descriptor_name(ops[i].desc)), rng));
    }
    if (tty) fmt::print(stderr, "\r{:<60}\r", "");
    return {{"model", model_},
            {"device", device_.label()},
            {"gpu", gpu_name_},
            {"backends", backend_names()},
            {"peaks", peaks_ ? nlohmann::json{{"fp32_tflops", peaks_->fp32_tflops},
                                              {"tf32_tflops", peaks_->tf32_tflops},
                                              {"half_tflops", peaks_->half_tflops},
                                              {"bandwidth_gbs", peaks_->bandwidth_gbs}}
                             : nlohmann::json(nullptr)},
            {"allow_tf32", allow_tf32_},
            {"repetitions", o_.repetitions},
            {"w_unchanged", o_.w_unchanged},
            {"measure", device_.is_gpu() ? kDeviceTimingMeasure : kHostTimingMeasure},
            {"distinct_ops", counts.size()},
            {"stopped_at_time_limit", stopped},
            {"ops", rows},
            {"summary", summarize_step(rows, backend_names())}};
  }

 private:
  nlohmann::json measure(const ModelOp& op, long long count, std::mt19937& rng) {
    OperandBuffers operands(op.desc, rng);
    ExecArgs args = device_.stage(operands, op);
    args.w_version = o_.w_unchanged ? 1 : 0;  // w is never written between the calls
    const OpWork work = op_work(op.desc);
    nlohmann::json row{{"layer", op.layer},
                       {"direction", direction_name(op.desc.direction)},
                       {"descriptor", descriptor_name(op.desc)},
                       {"count", count},
                       {"bytes", work.bytes}};
    if (work.flop > 0) row["flop"] = work.flop;
    if (op.desc.is_conv()) {  // what tools/gpu_check_summary.py sorts convs by
      row["groups"] = op.desc.groups;
      row["window"] = std::vector<std::int64_t>(op.desc.w_dims.begin() + 2,
                                                op.desc.w_dims.begin() + 2 + op.desc.spatial_dims);
    }
    std::optional<Roofline> bound;
    if (peaks_) {
      bound = roofline(work, *peaks_, compute_peak_tflops(*peaks_, op.desc.dtype, allow_tf32_));
      row["roofline_ms"] = bound->ms;
      row["bound"] = bound->compute_bound ? "compute" : "memory";
    }
    for (const auto& backend : backends_)
      row[std::string(backend->name())] = time_backend(*backend, op, args, work, bound);
    if (row.contains("jit") && row.contains("cudnn") && row["jit"].contains("ms") &&
        row["cudnn"].contains("ms"))
      row["jit_speedup"] = row["cudnn"]["ms"].get<double>() / row["jit"]["ms"].get<double>();
    auto chosen = Dispatcher::instance().resolve(op.desc, device_.device());
    row["policy"] = chosen.is_ok() ? std::string(chosen.value()->backend) : "none";
    if (chosen.is_ok() && !chosen.value()->variant.empty())
      row["policy_variant"] = chosen.value()->variant;
    if (!o_.predict_arch.empty()) row["predicted"] = predict(op.desc);
    return row;
  }

  // The JIT's auto variant on each GPU of --predict's architecture, from
  // `convjit analyze`'s counters and bottleneck model.
  nlohmann::json predict(const OpDescriptor& desc) const {
    if (Status s = jit_supports(desc); !s.is_ok()) return {{"declined", s.message()}};
    auto variant = resolve_variant(desc, o_.predict_arch, "");
    if (!variant.is_ok()) return {{"declined", variant.status().message()}};
    auto analysis = analysis::analyze_variant(desc, o_.predict_arch, variant.value(),
                                              *disassembler_, analysis::kDefaultSampledBlocks);
    if (!analysis.is_ok()) return {{"declined", analysis.status().message()}};
    nlohmann::json out{{"variant", variant.value()}, {"gpus", nlohmann::json::object()}};
    for (const analysis::VariantPrediction& v :
         analysis::predict_variant(desc, analysis.value(), o_.w_unchanged))
      out["gpus"][std::string(v.gpu->name)] =
          v.missing.empty() ? nlohmann::json{{"seconds", {v.seconds.low, v.seconds.high}},
                                             {"roofline_seconds", v.roofline_seconds}}
                            : nlohmann::json{{"missing", v.missing}};
    return out;
  }

  std::vector<std::string> backend_names() const {
    std::vector<std::string> names;
    for (const auto& backend : backends_) names.emplace_back(backend->name());
    return names;
  }

  // Every variant's median time (and share of the bound), and the best
  // one's, named, with its rate.
  nlohmann::json time_backend(Backend& backend, const ModelOp& op, const ExecArgs& args,
                              const OpWork& work, const std::optional<Roofline>& bound) {
    BuildTrace trace;
    auto variants = build_variants_if_supported(backend, op.desc, device_.device(), trace);
    if (!variants.is_ok()) return {{"declined", variants.status().message()}};
    nlohmann::json out = nlohmann::json::object(), each = nlohmann::json::object();
    std::string failures;  // one failing variant (a workspace too large, say) loses, no more
    for (const KernelVariant& v : variants.value()) {
      auto ms = median_kernel_ms(*v.kernel, args, device_.context(), o_.repetitions);
      if (!ms.is_ok()) {
        each[v.id] = "failed: " + ms.status().message();
        failures +=
            fmt::format("{}{}: {}", failures.empty() ? "" : "; ", v.id, ms.status().message());
        continue;
      }
      each[v.id] = {{"ms", ms.value()}};
      if (bound) each[v.id]["peak_fraction"] = bound->ms / ms.value();
      if (!out.contains("ms") || ms.value() < out["ms"].get<double>())
        out = {{"ms", ms.value()}, {"variant", v.id}};
    }
    if (!out.contains("ms")) check_op(Status(CONVJIT_STATUS_EXECUTION_FAILED, failures), op);
    if (each.size() > 1) out["variants"] = each;
    const double seconds = out["ms"].get<double>() * 1e-3;
    if (work.flop > 0) out["tflops"] = work.flop / seconds * 1e-12;
    out["gbs"] = work.bytes / seconds * 1e-9;
    if (bound) out["peak_fraction"] = bound->ms / out["ms"].get<double>();
    return out;
  }

  bool allow_tf32_ = SettingsStore::instance().snapshot()->allow_tf32.value;
  std::string model_;
  BenchOptions o_;
  RunDevice device_;
  std::vector<std::unique_ptr<Backend>> backends_;
  std::string gpu_name_;
  std::optional<DevicePeaks> peaks_;
  std::optional<Result<analysis::Disassembler>> disassembler_;  // with --predict
};

class BenchCommand final : public Command {
 public:
  explicit BenchCommand(CLI::App& app) {
    command_ = app.add_subcommand(
        "bench", "Time every op of a model on each backend of the device, side by side");
    model_.add_to(*command_);
    add_integer_flag(*command_, "--reps", options_.repetitions,
                     "timed samples per op and backend: calls on the host, batches of "
                     "back-to-back calls on a GPU",
                     {1, 10000});
    command_
        ->add_option("--time-limit", options_.time_limit_s,
                     "seconds after which no new op is measured; the report keeps the ops "
                     "measured so far and says it stopped")
        ->check(CLI::PositiveNumber);
    command_->add_option("--predict", options_.predict_arch,
                         "also predict each op's JIT kernels on the GPUs of this architecture "
                         "(sm_90, sm_80), as convjit analyze does; no GPU needed");
    add_direction_flag(*command_, options_.direction,
                       "only the ops of this direction (the step's totals then cover those alone)");
    command_->add_flag("--w-unchanged", options_.w_unchanged,
                       "every call promises w unchanged (convjit_exec_t::w_version), so a JIT "
                       "kernel that copies w into another order copies it once; --predict "
                       "leaves that pass out too");
    command_->add_flag("--json", options_.json, "machine-readable output");
    command_->add_option("--json-out", options_.json_file,
                         "also write the JSON report to this file (one run, both forms)");
    command_->footer(
        "Per op: the median time per call on each backend (the JIT and cuDNN on a GPU, timed\n"
        "with CUDA events around batches of back-to-back calls so host work does not count;\n"
        "oneDNN and the reference on the host; for cuDNN and oneDNN the best of every usable\n"
        "algorithm or layout, named after the time), TFLOP/s or GB/s and the share of the\n"
        "roofline bound where the device's limits are known (the math or moving every operand\n"
        "once, whichever takes longer), the\n"
        "JIT's speedup over cuDNN's best, and the backend (and variant) the policy serves it\n"
        "with; under it every variant of a backend that has several. Then the model's step: each\n"
        "backend's time with every op as often as the step runs it, the fastest per op, the\n"
        "policy's choices, and the JIT's geomean speedup per direction.\n"
        "--predict ARCH adds under each op the JIT's auto variant predicted on that\n"
        "architecture's GPUs (convjit analyze's model, a range), and the predicted step.\n\n"
        "Examples:\n  convjit bench --model resnet50 --batch 32 --dtype bf16\n"
        "  convjit bench --model yolo11n --imgsz 64 --reps 3 --json");
  }

  [[nodiscard]] const std::string& name() const override { return command_->get_name(); }
  [[nodiscard]] bool selected() const override { return command_->parsed(); }
  [[nodiscard]] int run() const override {
    if (!model_.given()) throw UsageError("bench needs --model NAME or --table FILE");
    if (!options_.predict_arch.empty() && analysis::gpus_of_arch(options_.predict_arch).empty())
      throw UsageError(fmt::format("--predict {}: no GPU of it is modelled; give one of {}",
                                   options_.predict_arch, analysis::modelled_archs()));
    Bench bench(model_.model_name(), options_);
    const std::vector<ModelOp> ops = model_.expand();
    std::ofstream json_file;
    if (!options_.json_file.empty()) {
      json_file.open(options_.json_file);
      if (!json_file)
        throw RuntimeError(fmt::format("--json-out {}: cannot write there; pick a writable path",
                                       options_.json_file));
    }
    const nlohmann::json report = bench.run(ops);
    if (json_file.is_open()) json_file << report.dump(2) << "\n";
    if (options_.json) {
      fmt::print("{}\n", report.dump(2));
    } else {
      fmt::print("{}", format_bench_report(report));
    }
    return kExitOk;
  }

 private:
  CLI::App* command_ = nullptr;
  ModelFlags model_;
  BenchOptions options_;
};

}  // namespace

std::unique_ptr<Command> make_bench_command(CLI::App& app) {
  return std::make_unique<BenchCommand>(app);
}

}  // namespace convjit::cli
