// The problem flags shared by `describe conv|pool|bias|batchnorm|resize` (and later commands)
// and their translation into a validated OpDescriptor.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit::cli {

enum class ProblemKind { conv, pool, bias, batchnorm, resize };

struct ProblemFlags {
  std::vector<std::int64_t> x, x_strides, w, w_strides, window, y_strides;
  std::vector<std::int64_t> dy, dy_strides;
  std::vector<std::int64_t> stride, pad, pad_begin, pad_end, dilation;
  std::int64_t groups = 1;
  std::string layout = "nchw";
  std::string dtype = "f32";
  std::string op = "fwd";
  std::string mode = "max";
  bool ceil = false;
  bool symbolic_batch = false;
  // A conv fwd's fused epilogue.
  std::string act = "identity";
  bool bias = false, residual = false;
  // batchnorm
  bool inference = false, no_scale = false, no_shift = false, onnx = false;
  double epsilon = 1e-5;
  std::vector<std::string> grads;
  // resize
  std::vector<std::int64_t> y;
  std::string resize_mode = "nearest", coordinates;
  std::vector<double> scale;
};

// Registers the flags of `kind` on a (sub)command.
void add_problem_flags(CLI::App& command, ProblemKind kind, ProblemFlags& flags);

// Builds the descriptor; throws UsageError naming the flag at fault.
[[nodiscard]] OpDescriptor build_descriptor(ProblemKind kind, const ProblemFlags& flags);

// A command's operation, given either as `conv|pool|bias|batchnorm|resize <flags>`
// subcommands or as `--name <descriptor>`.  Registers both on `command`.
class ProblemInput {
 public:
  explicit ProblemInput(CLI::App& command);
  ProblemInput(const ProblemInput&) = delete;
  ProblemInput& operator=(const ProblemInput&) = delete;

  // The validated operation; throws UsageError when it is missing,
  // ambiguous or invalid.
  [[nodiscard]] OpDescriptor descriptor() const;
  // Whether a problem was given at all (for commands that also take --model).
  [[nodiscard]] bool given() const;

 private:
  std::string command_name_;
  CLI::App* conv_;
  CLI::App* pool_;
  CLI::App* bias_;
  CLI::App* batchnorm_;
  CLI::App* resize_;
  std::string name_;
  ProblemFlags conv_flags_, pool_flags_, bias_flags_, batchnorm_flags_, resize_flags_;
};

}  // namespace convjit::cli
