// `convjit emulate`: one operation's JIT kernels through the host emulator,
// launched as on a GPU, on random operands; reports the launch, every
// violation the emulator found, and the error against the host reference.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <random>

#include "cli_status.hpp"
#include "command.hpp"
#include "dispatcher/backends/emulator/emulator_backend.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/backends/reference/reference_backend.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/tolerance.hpp"
#include "dispatcher/tuning/operand_buffers.hpp"
#include "integer_flags.hpp"
#include "problem_flags.hpp"

namespace convjit::cli {

namespace {

constexpr convjit_device_t kHost{CONVJIT_DEVICE_HOST, 0};

struct EmulationReport {
  KernelSource source;
  Status status;  // the emulator's verdict on the launch
  double error = 0, tolerance = 0;
  [[nodiscard]] bool passed() const { return status.is_ok() && error <= tolerance; }
};

EmulationReport emulate_once(const OpDescriptor& d, unsigned seed) {
  auto source = kernel_source(d);
  if (!source.is_ok()) throw RuntimeError(source.status().message());
  EmulationReport report{std::move(source).value(), {}, 0, kernel_tolerance(d)};
  EmulatorBackend emulator;
  BuildTrace trace;
  auto kernel = emulator.build(d, kHost, trace);
  if (!kernel.is_ok()) throw RuntimeError(kernel.status().message());
  std::mt19937 rng(seed);
  OperandBuffers operands(d, rng);
  std::vector<unsigned char> expected(operands.out.size());
  ExecArgs reference_args = operands.args;
  reference_args.out = expected.data();
  run_reference(d, reference_args);
  report.status = kernel.value()->execute(operands.args);
  if (report.status.is_ok()) report.error = max_relative_error(operands.out, expected, d.dtype);
  return report;
}

void print_text(const OpDescriptor& d, const EmulationReport& r) {
  fmt::print("{}\n", descriptor_name(d));
  fmt::print("{:<10}{} ({})\n", "template", r.source.template_name, dtype_name(d.dtype));
  for (const KernelEntry& e : r.source.entries)
    fmt::print("{:<10}{}: {} blocks x {} threads\n", "launch", e.name, e.blocks(),
               e.threads_per_block);
  fmt::print("{:<10}{} bytes\n", "workspace", r.source.workspace_bytes);
  if (r.status.is_ok()) {
    fmt::print(
        "{:<10}clean: no out-of-bounds access, race, divergent barrier or unwritten output\n",
        "checks");
    fmt::print("{:<10}{:.1e} against the host reference (tolerance {:.1e})\n", "error", r.error,
               r.tolerance);
  } else {
    fmt::print("{:<10}{}\n", "checks", r.status.message());
  }
  fmt::print("{:<10}{}\n", "result", r.passed() ? "pass" : "FAIL");
}

void print_json(const OpDescriptor& d, const EmulationReport& r) {
  nlohmann::json launches = nlohmann::json::array();
  for (const KernelEntry& e : r.source.entries)
    launches.push_back(
        {{"entry", e.name}, {"blocks", e.blocks()}, {"threads_per_block", e.threads_per_block}});
  nlohmann::json j{{"descriptor", descriptor_name(d)},
                   {"template", r.source.template_name},
                   {"dtype", dtype_name(d.dtype)},
                   {"launches", launches},
                   {"workspace_bytes", r.source.workspace_bytes},
                   {"violations", r.status.is_ok() ? "" : r.status.message()},
                   {"tolerance", r.tolerance},
                   {"passed", r.passed()}};
  if (r.status.is_ok()) j["max_error"] = r.error;
  fmt::print("{}\n", j.dump(2));
}

class EmulateCommand final : public Command {
 public:
  explicit EmulateCommand(CLI::App& app) {
    command_ = app.add_subcommand("emulate",
                                  "Run one operation's JIT kernels in the host emulator and check "
                                  "them against the reference");
    command_->footer(
        "Launches the kernels as the GPU would (same grid, block size and constants) with every\n"
        "memory access bounds-checked and shared memory race-checked. Exits 1 on a violation or\n"
        "an error beyond the dtype's tolerance.\n"
        "Examples:\n"
        "  convjit emulate conv --x 2,8,9,9 --w 16,8,3,3 --pad 1,1 --op bwdfilt --dtype f16\n"
        "  convjit emulate pool --x 1,4,7,7 --window 3,3 --stride 2,2 --mode avg");
    add_integer_flag(*command_, "--seed", seed_,
                     fmt::format("random operand seed (default {})", seed_));
    command_->add_flag("--json", json_, "machine-readable output");
    problem_ = std::make_unique<ProblemInput>(*command_);
  }

  [[nodiscard]] const std::string& name() const override { return command_->get_name(); }
  [[nodiscard]] bool selected() const override { return command_->parsed(); }
  [[nodiscard]] int run() const override {
    const OpDescriptor d = problem_->descriptor();
    if (Status s = jit_supports(d); !s.is_ok()) throw RuntimeError(s.message());
    const EmulationReport report = emulate_once(d, seed_);
    json_ ? print_json(d, report) : print_text(d, report);
    return report.passed() ? kExitOk : kExitRuntime;
  }

 private:
  CLI::App* command_ = nullptr;
  std::unique_ptr<ProblemInput> problem_;
  unsigned seed_ = 1;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_emulate_command(CLI::App& app) {
  return std::make_unique<EmulateCommand>(app);
}

}  // namespace convjit::cli
