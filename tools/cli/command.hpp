// A CLI subcommand: registers its flags on the app, then runs if chosen.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

namespace convjit::cli {

class Command {
 public:
  virtual ~Command() = default;
  [[nodiscard]] virtual const std::string& name() const = 0;
  // True if this subcommand was given on the command line.
  [[nodiscard]] virtual bool selected() const = 0;
  // The exit code; failures throw UsageError or RuntimeError (cli_status.hpp).
  [[nodiscard]] virtual int run() const = 0;
};

std::unique_ptr<Command> make_analyze_command(CLI::App& app);
std::unique_ptr<Command> make_bench_command(CLI::App& app);
std::unique_ptr<Command> make_calibrate_command(CLI::App& app);
std::unique_ptr<Command> make_cache_command(CLI::App& app);
std::unique_ptr<Command> make_describe_command(CLI::App& app);
std::unique_ptr<Command> make_doctor_command(CLI::App& app);
std::unique_ptr<Command> make_emulate_command(CLI::App& app);
std::unique_ptr<Command> make_export_command(CLI::App& app);
std::unique_ptr<Command> make_models_command(CLI::App& app);
std::unique_ptr<Command> make_preload_command(CLI::App& app);
std::unique_ptr<Command> make_query_command(CLI::App& app);
std::unique_ptr<Command> make_rules_command(CLI::App& app);
std::unique_ptr<Command> make_run_command(CLI::App& app);

}  // namespace convjit::cli
