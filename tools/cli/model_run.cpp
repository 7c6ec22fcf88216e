#include "model_run.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <set>

#include "cli_status.hpp"
#include "dispatcher/backends/reference/reference_backend.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/dispatcher.hpp"
#include "run_device.hpp"

namespace convjit::cli {

int run_model(const std::string& model, const std::vector<ModelOp>& ops, const ModelRunOptions& o) {
  RunDevice run_device;
  const convjit_device_t device = run_device.device();
  std::mt19937 rng(2026);
  nlohmann::json rows = nlohmann::json::array();
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  double first_total = 0, step_total = 0;
  int unserved = 0;
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
    double first = 0;
    try {
      first = run_device.timed_call(op, args, &backend);
    } catch (const RuntimeError&) {
      // No backend serves it on this device (a batchnorm on a GPU before
      // the JIT has kernels for it): a row that says why, not the end.
      auto declined = Dispatcher::instance().resolve(op.desc, device);
      if (declined.is_ok() || declined.status().code() == CONVJIT_STATUS_INVALID_ARGUMENT) throw;
      ++unserved;
      rows.push_back({{"layer", op.layer},
                      {"direction", direction_name(op.desc.direction)},
                      {"backend", "none"},
                      {"why", declined.status().message()},
                      {"count", op.count},
                      {"descriptor", name}});
      if (!o.json)
        fmt::print("{:<24.24} {:<8} {:<14} not served: {}\n", op.layer,
                   direction_name(op.desc.direction), "none", declined.status().message());
      continue;
    }
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
      error = max_relative_error(run_device.output(op), expected, op.desc.dtype);
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
                                      {"unserved_ops", unserved},
                                      {"first_call_ms", first_total},
                                      {"step_ms", step_total}}
                           .dump(2));
  } else {
    fmt::print(
        "{}: {} distinct ops on {}{}; first calls {:.1f} ms in total; one training step {:.1f} "
        "ms\n",
        model, rows.size(), run_device.label(),
        unserved ? fmt::format(", {} not served there", unserved) : "", first_total, step_total);
  }
  return kExitOk;
}

}  // namespace convjit::cli
