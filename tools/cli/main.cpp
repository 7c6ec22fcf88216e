// convjit command-line tool.  Exit codes: 0 ok, 1 runtime failure, 2 usage.
#include <CLI/CLI.hpp>
#include <vector>

#include "cli_status.hpp"
#include "command.hpp"
#include "version.hpp"

int main(int argc, char** argv) {
  using namespace convjit::cli;
  CLI::App app{"convjit: shape-specialised convolution and pooling kernels"};
  app.set_version_flag("--version", std::string("convjit ") + convjit::kVersionString +
                                        " (built with CUDA toolkit " +
                                        convjit::kCudaToolkitVersion + ", cuDNN headers " +
                                        convjit::kCudnnHeaderVersion + ")");
  app.require_subcommand(1);
  std::vector<std::unique_ptr<Command>> commands;
  commands.push_back(make_describe_command(app));
  commands.push_back(make_query_command(app));
  commands.push_back(make_models_command(app));
  commands.push_back(make_preload_command(app));
  commands.push_back(make_export_command(app));
  commands.push_back(make_cache_command(app));
  commands.push_back(make_rules_command(app));
  commands.push_back(make_doctor_command(app));
  commands.push_back(make_run_command(app));
  commands.push_back(make_bench_command(app));
  commands.push_back(make_emulate_command(app));
  commands.push_back(make_analyze_command(app));
  commands.push_back(make_calibrate_command(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, version or the error
    return code == 0 ? kExitOk : kExitUsage;
  }
  for (const auto& command : commands)
    if (command->selected())
      return run_reporting_errors(command->name(), [&] { return command->run(); });
  return kExitUsage;  // unreachable: CLI11 requires one subcommand
}
