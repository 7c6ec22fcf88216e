#include "model_flags.hpp"

#include <fmt/format.h>

#include "cli_status.hpp"

namespace convjit::cli {

std::string model_names() {
  std::string names;
  for (const auto& m : builtin_models()) names += (names.empty() ? "" : ", ") + m.name;
  return names;
}

void ModelFlags::add_to(CLI::App& command) {
  command.add_option("--model", model_, "a built-in model table: " + model_names());
  command.add_option("--batch", batch_, "batch size (default 1)")->check(CLI::Range(1, 1 << 20));
  command.add_option("--imgsz", image_size_, "input height and width (default: the model's)")
      ->check(CLI::Range(1, 1 << 20));
  command.add_option("--layout", layout_, "tensor layout")->check(CLI::IsMember({"nchw", "nhwc"}));
  command.add_option("--dtype", dtype_, "element type")
      ->check(CLI::IsMember({"f32", "f16", "bf16", "f64"}));
}

std::vector<ModelOp> ModelFlags::expand() const {
  const ModelTable* model = find_model(model_);
  if (model == nullptr)
    throw UsageError(
        fmt::format("--model {}: unknown model; the built-in ones are {}", model_, model_names()));
  const ModelOptions options{batch_, image_size_, layout_ == "nhwc", *parse_dtype(dtype_)};
  auto ops = expand_model(*model, options);
  if (!ops.is_ok()) throw UsageError(ops.status().message());
  return std::move(ops).value();
}

}  // namespace convjit::cli
