// `convjit calibrate`: runs the throughput probes (analysis/throughput_probes.hpp)
// on a GPU and sets each measured rate beside the range the bottleneck
// model holds for that GPU, so that one lent GPU calibrates the model.
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "analysis/gpu_spec.hpp"
#include "analysis/probe_runner.hpp"
#include "cli_status.hpp"
#include "command.hpp"

namespace convjit::cli {

namespace {

using analysis::ProbeReading;

nlohmann::json reading_json(const ProbeReading& r, const analysis::GpuSpec* gpu) {
  const analysis::ProbeUnit unit = analysis::probe_unit(r.plan.kind);
  nlohmann::json j{{"probe", r.plan.name()},
                   {"mode", static_cast<int>(r.plan.kind)},
                   {"seconds_per_launch", r.seconds},
                   {"work_per_launch", r.plan.work()},
                   {"unit", unit.name},
                   {"measured", r.rate() * unit.scale},
                   {"checked", r.check.is_ok()},
                   {"modelled", nullptr}};
  if (!r.check.is_ok()) j["check_error"] = r.check.message();
  if (gpu != nullptr) {
    const analysis::Range m =
        analysis::modelled_probe_rate(r.plan.kind, *gpu, *analysis::gpu_throughput(*gpu));
    j["modelled"] = {m.low * unit.scale, m.high * unit.scale};
  }
  return j;
}

nlohmann::json calibration_json(const analysis::DeviceCalibration& c) {
  const analysis::GpuSpec* gpu = analysis::gpu_spec_of_device(c.device);
  nlohmann::json probes = nlohmann::json::array();
  for (const ProbeReading& r : c.readings) probes.push_back(reading_json(r, gpu));
  return {{"device", c.device},
          {"arch", c.arch},
          {"sms", c.sms},
          {"model_row", gpu != nullptr ? nlohmann::json(gpu->name) : nlohmann::json(nullptr)},
          {"probes", probes}};
}

// "below", "inside" or "above" the model's range, with the measured value's
// ratio to the range's middle.
std::string against_model(const nlohmann::json& p) {
  if (p["modelled"].is_null()) return "not modelled";
  const double v = p["measured"].get<double>(), low = p["modelled"][0].get<double>(),
               high = p["modelled"][1].get<double>();
  const char* where = v < low ? "below" : v > high ? "above" : "inside";
  return fmt::format("{} ({:.2f}x the middle)", where, v / ((low + high) / 2));
}

void print_calibration(const nlohmann::json& r) {
  fmt::print("{} ({}, {} SMs); model row: {}\n", r["device"].get<std::string>(),
             r["arch"].get<std::string>(), r["sms"].get<int>(),
             r["model_row"].is_null() ? "none" : r["model_row"].get<std::string>());
  fmt::print("{:<15} {:>12} {:>22} {:<15} {}\n", "probe", "measured", "model", "unit",
             "against the model");
  for (const auto& p : r["probes"]) {
    const std::string model =
        p["modelled"].is_null() ? "-"
                                : fmt::format("{:.4g}-{:.4g}", p["modelled"][0].get<double>(),
                                              p["modelled"][1].get<double>());
    fmt::print("{:<15} {:>12.4g} {:>22} {:<15} {}\n", p["probe"].get<std::string>(),
               p["measured"].get<double>(), model, p["unit"].get<std::string>(),
               p["checked"].get<bool>() ? against_model(p)
                                        : "WRONG OUTPUT: " + p["check_error"].get<std::string>());
  }
}

class CalibrateCommand final : public Command {
 public:
  explicit CalibrateCommand(CLI::App& app) {
    command_ = app.add_subcommand(
        "calibrate",
        "Measure a GPU's copy, L2, mma.sync and ldmatrix rates and DRAM latency against the "
        "bottleneck model's ranges");
    command_->add_option("--device", device_, "CUDA device ordinal")->check(CLI::NonNegativeNumber);
    command_->add_flag("--json", json_, "machine-readable output");
    command_->add_option("--json-out", json_file_, "also write the JSON report to this file");
    command_->footer(
        "Each probe is a kernel_templates/calibration/throughput_probes.cuh mode, compiled\n"
        "with NVRTC for the device, timed as `convjit bench` times kernels, and its output\n"
        "checked: a probe that computed the wrong thing is reported, never its rate.\n"
        "Needs a CUDA GPU (about 10 s and 2.2 GiB of its memory).\n\n"
        "Examples:\n  convjit calibrate\n  convjit calibrate --json-out calibration.json");
  }
  [[nodiscard]] const std::string& name() const override { return command_->get_name(); }
  [[nodiscard]] bool selected() const override { return command_->parsed(); }

  [[nodiscard]] int run() const override {
    auto calibration = analysis::run_calibration_probes(device_);
    if (!calibration.is_ok())
      throw RuntimeError(fmt::format("cannot calibrate device {}: {}", device_,
                                     calibration.status().message()));
    const nlohmann::json report = calibration_json(calibration.value());
    if (!json_file_.empty()) {
      std::ofstream file(json_file_);
      if (!(file << report.dump(2) << "\n"))
        throw RuntimeError(fmt::format("--json-out {}: cannot write there; pick a writable path",
                                       json_file_));
    }
    if (json_)
      fmt::print("{}\n", report.dump(2));
    else
      print_calibration(report);
    for (const ProbeReading& r : calibration.value().readings)
      if (!r.check.is_ok()) return kExitRuntime;
    return kExitOk;
  }

 private:
  CLI::App* command_ = nullptr;
  int device_ = 0;
  bool json_ = false;
  std::string json_file_;
};

}  // namespace

std::unique_ptr<Command> make_calibrate_command(CLI::App& app) {
  return std::make_unique<CalibrateCommand>(app);
}

}  // namespace convjit::cli
