#include "model_flags.hpp"

#include <fmt/format.h>

#include "cli_status.hpp"
#include "dispatcher/models/model_table_json.hpp"
#include "integer_flags.hpp"

namespace convjit::cli {

std::string model_names() {
  std::string names;
  for (const auto& m : builtin_models()) names += (names.empty() ? "" : ", ") + m.name;
  return names;
}

void ModelFlags::add_to(CLI::App& command) {
  auto* model = command.add_option("--model", model_, "a built-in model table: " + model_names());
  command.add_option("--table", table_, "a model table in JSON (see the README)")->excludes(model);
  add_integer_flag(command, "--batch", batch_, "batch size (default 1)", {1, 1 << 20});
  add_integer_flag(command, "--imgsz", image_size_, "input height and width (default: the model's)",
                   {1, 1 << 20});
  command.add_option("--layout", layout_, "tensor layout")->check(CLI::IsMember({"nchw", "nhwc"}));
  command
      .add_option("--filter-layout", filter_layout_,
                  "the filters' layout: kcrs (LBANN's, PyTorch's default; the default) or krsc "
                  "(PyTorch's channels-last modules)")
      ->check(CLI::IsMember({"kcrs", "krsc"}));
  command.add_option("--dtype", dtype_, "element type")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "f64"}));
  command.add_flag("--fused", fused_,
                   "forward convs as Conv+BN+act blocks, the batch norm folded into w and a bias, "
                   "with the bias and the activation fused (yolo11n: SiLU)");
}

void add_direction_flag(CLI::App& command, std::string& direction, const std::string& help) {
  command.add_option("--direction", direction, help)
      ->check(CLI::IsMember({"fwd", "bwddata", "bwdfilt", "bwd"}));
}

bool in_direction(const ModelOp& op, const std::string& direction) {
  return direction.empty() || direction_name(op.desc.direction) == direction;
}

std::string ModelFlags::model_name() const { return model_.empty() ? table_ : model_; }

std::vector<ModelOp> ModelFlags::expand() const {
  ModelTable loaded;
  const ModelTable* model = nullptr;
  if (!table_.empty()) {
    auto table = load_model_table(table_);
    if (!table.is_ok()) {
      // An unreadable file is a runtime failure; a malformed one bad input.
      if (table.status().code() == CONVJIT_STATUS_NOT_AVAILABLE)
        throw RuntimeError("--table: " + table.status().message());
      throw UsageError("--table: " + table.status().message());
    }
    loaded = std::move(table).value();
    model = &loaded;
  } else {
    model = find_model(model_);
  }
  if (model == nullptr)
    throw UsageError(
        fmt::format("--model {}: unknown model; the built-in ones are {}", model_, model_names()));
  const ModelOptions options{.batch = batch_,
                             .image_size = image_size_,
                             .channels_last = layout_ == "nhwc",
                             .dtype = *parse_dtype(dtype_),
                             .fused = fused_,
                             .krsc_filters = filter_layout_ == "krsc"};
  auto ops = expand_model(*model, options);
  if (!ops.is_ok()) throw UsageError(ops.status().message());
  return std::move(ops).value();
}

}  // namespace convjit::cli
