// --model NAME with --batch, --imgsz, --layout, --filter-layout and
// --dtype, shared by the commands that work on a built-in model table.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "dispatcher/models/model_table.hpp"

namespace convjit::cli {

class ModelFlags {
 public:
  void add_to(CLI::App& command);
  [[nodiscard]] bool given() const { return !model_.empty() || !table_.empty(); }
  // The model's name (built-in) or the table file's.
  [[nodiscard]] std::string model_name() const;
  [[nodiscard]] std::int64_t batch() const { return batch_; }
  [[nodiscard]] std::int64_t image_size() const { return image_size_; }  // 0: default
  [[nodiscard]] bool channels_last() const { return layout_ == "nhwc"; }
  // The model's operations; throws UsageError for an unknown model or
  // options the model cannot take.
  [[nodiscard]] std::vector<ModelOp> expand() const;

 private:
  std::string model_;
  std::string table_;
  std::int64_t batch_ = 1;
  std::int64_t image_size_ = 0;
  std::string layout_ = "nchw";
  std::string filter_layout_ = "kcrs";
  std::string dtype_ = "f32";
  bool fused_ = false;
};

// "resnet50, yolo11n, cosmoflow"
[[nodiscard]] std::string model_names();

// --direction: keep a model's ops of one direction (fwd, bwddata, bwdfilt,
// or a pool's bwd); `help` says what the command does with the rest.
void add_direction_flag(CLI::App& command, std::string& direction, const std::string& help);
// Whether `op` is kept by a --direction of `direction` (empty: every op).
[[nodiscard]] bool in_direction(const ModelOp& op, const std::string& direction);

}  // namespace convjit::cli
