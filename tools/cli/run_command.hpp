// `convjit run`: the main job.  Runs a small built-in conv+pool network
// forward and backward through the dispatcher and prints, per call, the
// descriptor name and the backend that served it.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>

namespace convjit::cli {

class RunCommand {
 public:
  explicit RunCommand(CLI::App& app);
  ~RunCommand();
  [[nodiscard]] bool selected() const;
  [[nodiscard]] int run() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace convjit::cli
