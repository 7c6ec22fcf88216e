// `convjit query`: a dry run of the dispatch chain for one operation.  It
// shows where the call would resolve and why, with every file it probes.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>

namespace convjit::cli {

class QueryCommand {
 public:
  explicit QueryCommand(CLI::App& app);
  ~QueryCommand();
  [[nodiscard]] bool selected() const;
  [[nodiscard]] int run() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace convjit::cli
