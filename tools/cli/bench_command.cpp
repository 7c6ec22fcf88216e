// `convjit bench --model NAME`: every distinct op of a model's training step
// timed on each backend the device offers (the JIT and cuDNN on a GPU, the
// reference on the host), side by side in one run: the median time of the
// backend's best variant (cuDNN: the best of its usable algorithms), the
// JIT's speedup over cuDNN, the achieved TFLOP/s (convolution) or GB/s
// (pooling, bias gradient) against the device's limits, and which backend
// the `auto` policy picks.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "cli_status.hpp"
#include "command.hpp"
#include "device_peaks.hpp"
#include "dispatcher/backends/cudnn/cudnn_backend.hpp"
#include "dispatcher/backends/jit/jit_backend.hpp"
#include "dispatcher/backends/reference/reference_backend.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/operand_layout.hpp"
#include "dispatcher/tuning/kernel_timing.hpp"
#include "integer_flags.hpp"
#include "model_flags.hpp"
#include "run_device.hpp"

namespace convjit::cli {

namespace {

std::int64_t elements(const Dims5& dims, int rank) {
  std::int64_t n = 1;
  for (int i = 0; i < rank; ++i) n *= dims[static_cast<std::size_t>(i)];
  return n;
}

// Convolution: 2 FLOP per multiply-add, the same count in every direction
// (each y element takes C/G times the filter's taps).
double conv_flop(const OpDescriptor& d) {
  const std::int64_t taps = elements(d.w_dims, d.rank()) / d.w_dims[0];
  return 2.0 * static_cast<double>(elements(d.y_dims, d.rank())) * static_cast<double>(taps);
}

// Pooling and the bias gradient: the bytes every input and output moves once.
double memory_bytes(const OpDescriptor& d) {
  const double x = static_cast<double>(elements(d.x_dims, d.rank()));
  const double y = static_cast<double>(elements(d.y_dims, d.rank()));
  const double size = static_cast<double>(element_size(d.dtype));
  if (d.kind == OpKind::bias_grad) return (y + static_cast<double>(d.y_dims[1])) * size;
  if (d.direction == Direction::fwd) return (x + y) * size;
  return (d.pool_mode == PoolingMode::max ? 2 * x + y : x + y) * size;  // dx, dy (and x)
}

// The backends compared on the device, each asked for every variant it
// offers (every usable cuDNN algorithm, say), so a column is its best.
std::vector<std::unique_ptr<Backend>> compared_backends(bool gpu) {
  std::vector<std::unique_ptr<Backend>> backends;
  if (gpu) {
    backends.push_back(std::make_unique<JitBackend>());
    backends.push_back(std::make_unique<CudnnBackend>());
  } else {
    backends.push_back(std::make_unique<ReferenceBackend>());
  }
  return backends;
}

std::size_t distinct_ops(const std::vector<ModelOp>& ops) {
  std::set<std::string> names;
  for (const ModelOp& op : ops) names.insert(descriptor_name(op.desc));
  return names.size();
}

struct BenchOptions {
  int repetitions = 5;
  double time_limit_s = 0;  // > 0: measure no new op after this long
  bool json = false;
  std::string json_file;  // also write the JSON report here
};

class Bench {
 public:
  Bench(std::string model, const BenchOptions& options) : model_(std::move(model)), o_(options) {
    backends_ = compared_backends(device_.is_gpu());
    if (device_.is_gpu()) {
      gpu_name_ = CudaDriver::instance().name_of(0);
      peaks_ = device_peaks(gpu_name_);
    }
  }

  nlohmann::json run(const std::vector<ModelOp>& ops) {
    std::mt19937 rng(2026);
    std::set<std::string> seen;
    nlohmann::json rows = nlohmann::json::array();
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    const auto start = std::chrono::steady_clock::now();
    bool stopped = false;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (!seen.insert(descriptor_name(ops[i].desc)).second) continue;
      if (o_.time_limit_s > 0 &&
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
              o_.time_limit_s) {
        stopped = true;
        break;
      }
      if (tty)
        fmt::print(stderr, "\r[{}/{}] {:<40}", i + 1, ops.size(), ops[i].layer), std::fflush(stderr);
      rows.push_back(measure(ops[i], rng));
    }
    if (tty) fmt::print(stderr, "\r{:<60}\r", "");
    return {{"model", model_},
            {"device", device_.label()},
            {"gpu", gpu_name_},
            {"backends", backend_names()},
            {"peaks", peaks_ ? nlohmann::json{{"fp32_tflops", peaks_->fp32_tflops},
                                              {"half_tflops", peaks_->half_tflops},
                                              {"bandwidth_gbs", peaks_->bandwidth_gbs}}
                             : nlohmann::json(nullptr)},
            {"repetitions", o_.repetitions},
            {"measure", device_.is_gpu() ? kDeviceTimingMeasure : kHostTimingMeasure},
            {"distinct_ops", distinct_ops(ops)},
            {"stopped_at_time_limit", stopped},
            {"ops", rows}};
  }

 private:
  nlohmann::json measure(const ModelOp& op, std::mt19937& rng) {
    OperandBuffers operands(op.desc, rng);
    const ExecArgs args = device_.stage(operands, op);
    const bool is_conv = op.desc.is_conv();
    const double work = is_conv ? conv_flop(op.desc) : memory_bytes(op.desc);
    nlohmann::json row{{"layer", op.layer},
                       {"direction", direction_name(op.desc.direction)},
                       {"descriptor", descriptor_name(op.desc)},
                       {is_conv ? "flop" : "bytes", work}};
    for (const auto& backend : backends_)
      row[std::string(backend->name())] = time_backend(*backend, op, args, work, is_conv);
    if (row.contains("jit") && row.contains("cudnn") && row["jit"].contains("ms") &&
        row["cudnn"].contains("ms"))
      row["jit_speedup"] = row["cudnn"]["ms"].get<double>() / row["jit"]["ms"].get<double>();
    auto chosen = Dispatcher::instance().resolve(op.desc, device_.device());
    row["policy"] = chosen.is_ok() ? std::string(chosen.value()->backend) : "none";
    return row;
  }

  std::vector<std::string> backend_names() const {
    std::vector<std::string> names;
    for (const auto& backend : backends_) names.emplace_back(backend->name());
    return names;
  }

  // The backend's best variant: its median time and rate, which variant,
  // and every variant's median when there are several.
  nlohmann::json time_backend(Backend& backend, const ModelOp& op, const ExecArgs& args,
                              double work, bool is_conv) {
    BuildTrace trace;
    auto variants = build_variants_if_supported(backend, op.desc, device_.device(), trace);
    if (!variants.is_ok()) return {{"declined", variants.status().message()}};
    nlohmann::json out = nlohmann::json::object(), each = nlohmann::json::object();
    std::string failures;  // one failing variant (a workspace too large, say) loses, no more
    for (const KernelVariant& v : variants.value()) {
      auto ms = median_kernel_ms(*v.kernel, args, device_.context(), o_.repetitions);
      if (!ms.is_ok()) {
        each[v.id] = "failed: " + ms.status().message();
        failures += fmt::format("{}{}: {}", failures.empty() ? "" : "; ", v.id, ms.status().message());
        continue;
      }
      each[v.id] = ms.value();
      if (!out.contains("ms") || ms.value() < out["ms"].get<double>())
        out = {{"ms", ms.value()}, {"variant", v.id}};
    }
    if (!out.contains("ms")) check_op(Status(CONVJIT_STATUS_EXECUTION_FAILED, failures), op);
    if (each.size() > 1) out["variants"] = each;
    const double ms = out["ms"].get<double>();
    const double rate = work / (ms * 1e-3);
    if (is_conv) {
      out["tflops"] = rate * 1e-12;
      if (peaks_) out["peak_fraction"] = rate * 1e-12 / compute_peak_tflops(*peaks_, op.desc.dtype);
    } else {
      out["gbs"] = rate * 1e-9;
      if (peaks_) out["peak_fraction"] = rate * 1e-9 / peaks_->bandwidth_gbs;
    }
    return out;
  }

  std::string model_;
  BenchOptions o_;
  RunDevice device_;
  std::vector<std::unique_ptr<Backend>> backends_;
  std::string gpu_name_;
  std::optional<DevicePeaks> peaks_;
};

std::string cell(const nlohmann::json& timing) {
  if (!timing.contains("ms")) return "declined";
  std::string rate = fmt::format("{:.1f} GB/s", timing.value("gbs", 0.0));
  if (timing.contains("tflops")) {
    const double tflops = timing["tflops"].get<double>();
    rate = tflops < 1 ? fmt::format("{:.1f} GF/s", 1e3 * tflops) : fmt::format("{:.2f} TF/s", tflops);
  }
  const std::string peak = timing.contains("peak_fraction")
                               ? fmt::format(" {:.0f}%", 100 * timing["peak_fraction"].get<double>())
                               : "";
  const std::string variant =
      timing.contains("variants") ? " " + timing["variant"].get<std::string>() : "";
  return fmt::format("{:.4f} ms {}{}{}", timing["ms"].get<double>(), rate, peak, variant);
}

// Each backend's column as wide as its widest cell.
std::vector<std::size_t> column_widths(const nlohmann::json& report,
                                       const std::vector<std::string>& backends) {
  std::vector<std::size_t> widths;
  for (const auto& b : backends) {
    std::size_t width = b.size();
    for (const auto& row : report["ops"]) width = std::max(width, cell(row[b]).size());
    widths.push_back(width);
  }
  return widths;
}

void print_table(const nlohmann::json& report) {
  const auto backends = report["backends"].get<std::vector<std::string>>();
  const auto widths = column_widths(report, backends);
  fmt::print("convjit bench: {} on {}{}, a backend's best variant\n",
             report["model"].get<std::string>(), report["device"].get<std::string>(),
             report["gpu"].get<std::string>().empty()
                 ? ""
                 : " (" + report["gpu"].get<std::string>() + ")");
  fmt::print("measure: {} ({} {})\n", report["measure"].get<std::string>(),
             report["repetitions"].get<int>(),
             report["device"].get<std::string>() == "host" ? "calls" : "batches");
  fmt::print("{:<24} {:<8}", "layer", "op");
  for (std::size_t i = 0; i < backends.size(); ++i) fmt::print(" {:<{}}", backends[i], widths[i]);
  fmt::print(" {:>9} {}\n", backends.size() > 1 ? "jit/cuDNN" : "", "policy");
  for (const auto& row : report["ops"]) {
    fmt::print("{:<24.24} {:<8}", row["layer"].get<std::string>(),
               row["direction"].get<std::string>());
    for (std::size_t i = 0; i < backends.size(); ++i)
      fmt::print(" {:<{}}", cell(row[backends[i]]), widths[i]);
    fmt::print(" {:>9} {}\n",
               row.contains("jit_speedup") ? fmt::format("{:.2f}x", row["jit_speedup"].get<double>())
                                           : "",
               row["policy"].get<std::string>());
  }
  if (report["stopped_at_time_limit"].get<bool>())
    fmt::print("stopped at --time-limit after {} of {} distinct ops\n", report["ops"].size(),
               report["distinct_ops"].get<std::size_t>());
}

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
    command_->add_option("--time-limit", options_.time_limit_s,
                         "seconds after which no new op is measured; the report keeps the ops "
                         "measured so far and says it stopped")
        ->check(CLI::PositiveNumber);
    command_->add_flag("--json", options_.json, "machine-readable output");
    command_->add_option("--json-out", options_.json_file,
                         "also write the JSON report to this file (one run, both forms)");
    command_->footer(
        "Per op: the median time per call on each backend (the JIT and cuDNN on a GPU, timed\n"
        "with CUDA events around batches of back-to-back calls so host work does not count;\n"
        "the reference on the host; for cuDNN the best of every usable algorithm, named after\n"
        "the time), TFLOP/s\n"
        "or GB/s and the share of the device's peak where it is known, the JIT's speedup over\n"
        "cuDNN's best, and the backend the auto policy picks.\n\n"
        "Examples:\n  convjit bench --model resnet50 --batch 32 --dtype bf16\n"
        "  convjit bench --model yolo11n --imgsz 64 --reps 3 --json");
  }

  [[nodiscard]] const std::string& name() const override { return command_->get_name(); }
  [[nodiscard]] bool selected() const override { return command_->parsed(); }
  [[nodiscard]] int run() const override {
    if (!model_.given()) throw UsageError("bench needs --model NAME or --table FILE");
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
      print_table(report);
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
