// `convjit bench --model NAME`: every distinct op of a model's training step
// timed on each backend the device offers (the JIT and cuDNN on a GPU, the
// reference on the host), side by side in one run: the median time, the
// JIT's speedup over cuDNN, the achieved TFLOP/s (convolution) or GB/s
// (pooling, bias gradient) against the device's limits, and which backend
// the `auto` policy picks.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "cli_status.hpp"
#include "command.hpp"
#include "cudnn/cudnn_backend.hpp"
#include "descriptor_name.hpp"
#include "device_peaks.hpp"
#include "jit/jit_backend.hpp"
#include "model_flags.hpp"
#include "operand_layout.hpp"
#include "reference/reference_backend.hpp"
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

std::unique_ptr<Dispatcher> single_backend(const std::string& name) {
  std::vector<std::unique_ptr<Backend>> chain;
  if (name == "jit") chain.push_back(std::make_unique<JitBackend>());
  if (name == "cudnn") chain.push_back(std::make_unique<CudnnBackend>());
  if (name == "reference") chain.push_back(std::make_unique<ReferenceBackend>());
  return std::make_unique<Dispatcher>(std::move(chain));
}

struct BenchOptions {
  int repetitions = 5;
  bool json = false;
  std::string json_file;  // also write the JSON report here
};

class Bench {
 public:
  Bench(std::string model, const BenchOptions& options) : model_(std::move(model)), o_(options) {
    backends_ = device_.is_gpu() ? std::vector<std::string>{"jit", "cudnn"}
                                 : std::vector<std::string>{"reference"};
    for (const auto& b : backends_) dispatchers_[b] = single_backend(b);
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
    for (std::size_t i = 0; i < ops.size(); ++i) {
      if (!seen.insert(descriptor_name(ops[i].desc)).second) continue;
      if (tty)
        fmt::print(stderr, "\r[{}/{}] {:<40}", i + 1, ops.size(), ops[i].layer), std::fflush(stderr);
      rows.push_back(measure(ops[i], rng));
    }
    if (tty) fmt::print(stderr, "\r{:<60}\r", "");
    return {{"model", model_},
            {"device", device_.label()},
            {"gpu", gpu_name_},
            {"backends", backends_},
            {"peaks", peaks_ ? nlohmann::json{{"fp32_tflops", peaks_->fp32_tflops},
                                              {"half_tflops", peaks_->half_tflops},
                                              {"bandwidth_gbs", peaks_->bandwidth_gbs}}
                             : nlohmann::json(nullptr)},
            {"repetitions", o_.repetitions},
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
    for (const auto& name : backends_) row[name] = time_backend(name, op, args, work, is_conv);
    if (row.contains("jit") && row.contains("cudnn") && row["jit"].contains("ms") &&
        row["cudnn"].contains("ms"))
      row["jit_speedup"] = row["cudnn"]["ms"].get<double>() / row["jit"]["ms"].get<double>();
    auto chosen = Dispatcher::instance().resolve(op.desc, device_.device());
    row["policy"] = chosen.is_ok() ? std::string(chosen.value()->backend) : "none";
    return row;
  }

  nlohmann::json time_backend(const std::string& name, const ModelOp& op, const ExecArgs& args,
                              double work, bool is_conv) {
    Dispatcher& dispatcher = *dispatchers_[name];
    auto resolved = dispatcher.resolve(op.desc, device_.device());
    if (!resolved.is_ok()) return {{"declined", resolved.status().message()}};
    (void)device_.timed_call(dispatcher, op, args);  // warm-up: caches, clocks
    std::vector<double> times;
    for (int r = 0; r < o_.repetitions; ++r) times.push_back(device_.timed_call(dispatcher, op, args));
    std::sort(times.begin(), times.end());
    const double ms = times[times.size() / 2];
    nlohmann::json out{{"ms", ms}};
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
  std::vector<std::string> backends_;
  std::map<std::string, std::unique_ptr<Dispatcher>> dispatchers_;
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
  return fmt::format("{:.4f} ms {}{}", timing["ms"].get<double>(), rate, peak);
}

void print_table(const nlohmann::json& report) {
  const auto backends = report["backends"].get<std::vector<std::string>>();
  fmt::print("convjit bench: {} on {}{}, median of {} calls per backend\n",
             report["model"].get<std::string>(), report["device"].get<std::string>(),
             report["gpu"].get<std::string>().empty()
                 ? ""
                 : " (" + report["gpu"].get<std::string>() + ")",
             report["repetitions"].get<int>());
  fmt::print("{:<24} {:<8}", "layer", "op");
  for (const auto& b : backends) fmt::print(" {:<32}", b);
  fmt::print(" {:>8} {:<14}\n", backends.size() > 1 ? "jit/cuDNN" : "", "policy");
  for (const auto& row : report["ops"]) {
    fmt::print("{:<24.24} {:<8}", row["layer"].get<std::string>(),
               row["direction"].get<std::string>());
    for (const auto& b : backends) fmt::print(" {:<32}", cell(row[b]));
    fmt::print(" {:>8} {:<14}\n",
               row.contains("jit_speedup") ? fmt::format("{:.2f}x", row["jit_speedup"].get<double>())
                                           : "",
               row["policy"].get<std::string>());
  }
}

class BenchCommand final : public Command {
 public:
  explicit BenchCommand(CLI::App& app) {
    command_ = app.add_subcommand(
        "bench", "Time every op of a model on each backend of the device, side by side");
    model_.add_to(*command_);
    command_->add_option("--reps", options_.repetitions, "timed calls per op and backend")
        ->check(CLI::Range(1, 10000));
    command_->add_flag("--json", options_.json, "machine-readable output");
    command_->add_option("--json-out", options_.json_file,
                         "also write the JSON report to this file (one run, both forms)");
    command_->footer(
        "Per op: the median time on each backend (the JIT and cuDNN on a GPU, the reference on\n"
        "the host), TFLOP/s or GB/s and the share of the device's peak where it is known, the\n"
        "JIT's speedup over cuDNN, and the backend the auto policy picks.\n\n"
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
