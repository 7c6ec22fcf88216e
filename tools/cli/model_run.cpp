#include "model_run.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "cli_status.hpp"
#include "cuda/device_buffer.hpp"
#include "descriptor_name.hpp"
#include "dispatcher.hpp"
#include "operand_buffers.hpp"
#include "reference/reference_backend.hpp"

namespace convjit::cli {

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void check(const Status& s, const ModelOp& op) {
  if (!s.is_ok())
    throw RuntimeError(
        fmt::format("{} {}: {}", op.layer, direction_name(op.desc.direction), s.message()));
}

// Where the run happens: CUDA device 0 when a driver and a GPU are there,
// else the host.  On a GPU each op's operands are staged in device memory
// and every timed call is waited for.
class RunDevice {
 public:
  RunDevice() {
    auto context = DeviceContext::open(0);
    if (context.is_ok()) context_ = context.value();
  }
  [[nodiscard]] bool is_gpu() const { return context_ != nullptr; }
  [[nodiscard]] convjit_device_t device() const {
    return is_gpu() ? convjit_device_t{CONVJIT_DEVICE_CUDA, 0}
                    : convjit_device_t{CONVJIT_DEVICE_HOST, 0};
  }
  [[nodiscard]] const char* label() const { return is_gpu() ? "cuda:0" : "host"; }

  // The op's arguments on this device; device copies live until the next call.
  ExecArgs stage(const OperandBuffers& host, const ModelOp& op) {
    staged_.clear();
    if (!is_gpu()) return host.args;
    ExecArgs args = host.args;
    args.x = args.x ? copy(host.x, op) : nullptr;
    args.w = args.w ? copy(host.w, op) : nullptr;
    args.dy = args.dy ? copy(host.dy, op) : nullptr;
    args.out = copy(host.out, op);
    return args;
  }

  // Milliseconds for one call, including the wait for the device.
  double timed_call(const ModelOp& op, const ExecArgs& args, std::string_view* backend = nullptr) {
    const auto start = Clock::now();
    check(Dispatcher::instance().execute(op.desc, device(), args, backend), op);
    if (is_gpu()) check(context_->synchronize(), op);
    return ms_since(start);
  }

  // The staged output, on the host.
  std::vector<unsigned char> output(const OperandBuffers& host, const ModelOp& op) const {
    if (!is_gpu()) return host.out;
    std::vector<unsigned char> out(host.out.size());
    check(staged_.back()->download(out.data()), op);
    return out;
  }

 private:
  void* copy(const std::vector<unsigned char>& bytes, const ModelOp& op) {
    auto buffer = DeviceBuffer::allocate(context_, bytes.size());
    check(buffer.status(), op);
    check(buffer.value()->upload(bytes.data()), op);
    staged_.push_back(std::move(buffer).value());
    return staged_.back()->get();
  }

  std::shared_ptr<DeviceContext> context_;
  std::vector<std::unique_ptr<DeviceBuffer>> staged_;  // out last
};

}  // namespace

int run_model(const std::string& model, const std::vector<ModelOp>& ops, const ModelRunOptions& o) {
  RunDevice run_device;
  const convjit_device_t device = run_device.device();
  std::mt19937 rng(2026);
  nlohmann::json rows = nlohmann::json::array();
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  double first_total = 0, step_total = 0;
  std::set<std::string> seen;
  if (!o.json)
    fmt::print("{:<24} {:<8} {:<14} {:>10} {:>10} {:>9}  {}\n", "layer", "op", "backend",
               "first ms", "steady ms", o.verify ? "max err" : "", "descriptor");
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const ModelOp& op = ops[i];
    const std::string name = descriptor_name(op.desc);
    if (!seen.insert(name).second) continue;
    if (tty)
      fmt::print(stderr, "\r[{}/{}] {:<40}", i + 1, ops.size(), op.layer), std::fflush(stderr);
    OperandBuffers operands(op.desc, rng);
    const ExecArgs args = run_device.stage(operands, op);
    std::string_view backend;
    const double first = run_device.timed_call(op, args, &backend);
    std::vector<double> times;
    for (int r = 0; r < o.repetitions; ++r) times.push_back(run_device.timed_call(op, args));
    std::sort(times.begin(), times.end());
    const double steady = times.empty() ? first : times[times.size() / 2];
    double error = 0;
    if (o.verify) {
      // Same inputs, own output (beta is 0, so its contents do not matter).
      std::vector<unsigned char> expected(operands.out.size());
      ExecArgs reference_args = operands.args;
      reference_args.out = expected.data();
      run_reference(op.desc, reference_args);
      error = max_relative_error(run_device.output(operands, op), expected, op.desc.dtype);
    }
    auto resolved = Dispatcher::instance().resolve(op.desc, device);
    first_total += first;
    step_total += steady * op.count;
    rows.push_back({{"layer", op.layer},
                    {"direction", direction_name(op.desc.direction)},
                    {"backend", backend},
                    {"why", resolved.is_ok() ? resolved.value()->reason : ""},
                    {"first_ms", first},
                    {"steady_ms", steady},
                    {"count", op.count},
                    {"descriptor", name}});
    if (o.verify) rows.back()["max_error"] = error;
    if (!o.json)
      fmt::print("{:<24.24} {:<8} {:<14} {:>10.3f} {:>10.3f} {:>9}  {}\n", op.layer,
                 direction_name(op.desc.direction), backend, first, steady,
                 o.verify ? fmt::format("{:.1e}", error) : "", name);
  }
  if (tty) fmt::print(stderr, "\r{:<60}\r", "");
  if (o.json) {
    fmt::print("{}\n", nlohmann::json{{"model", model},
                                      {"device", run_device.label()},
                                      {"ops", rows},
                                      {"first_call_ms", first_total},
                                      {"step_ms", step_total}}
                           .dump(2));
  } else {
    fmt::print(
        "{}: {} distinct ops on {}; first calls {:.1f} ms in total; one training step {:.1f} ms\n",
        model, rows.size(), run_device.label(), first_total, step_total);
  }
  return kExitOk;
}

}  // namespace convjit::cli
