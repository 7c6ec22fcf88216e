// `convjit describe`: the canonical name and fields of an operation, given
// as problem flags (conv | pool | bias) or as a descriptor name.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>

namespace convjit::cli {

class DescribeCommand {
 public:
  explicit DescribeCommand(CLI::App& app);
  ~DescribeCommand();
  [[nodiscard]] bool selected() const;
  [[nodiscard]] int run() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace convjit::cli
