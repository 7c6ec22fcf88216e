// `convjit run --model|--table`: every operation of a model's training step
// through the dispatcher, with the first-call cost, the steady-state time,
// the backend and why, and optionally the error against the host reference.
#pragma once

#include <vector>

#include "dispatcher/models/model_table.hpp"

namespace convjit::cli {

struct ModelRunOptions {
  int repetitions = 3;  // steady-state calls per op (the median is shown)
  bool verify = false;  // compare with the host reference
  bool json = false;
};

// Prints the table (or JSON) and returns the exit code.
int run_model(const std::string& model, const std::vector<ModelOp>& ops,
              const ModelRunOptions& options);

}  // namespace convjit::cli
