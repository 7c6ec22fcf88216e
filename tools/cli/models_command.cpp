// `convjit models`: the built-in model tables, or one table's operations.
#include <fmt/format.h>

#include "cli_status.hpp"
#include "command.hpp"
#include "dispatcher/descriptor/descriptor_json.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "model_flags.hpp"

namespace convjit::cli {

namespace {

class ModelsCommand final : public Command {
 public:
  explicit ModelsCommand(CLI::App& app) {
    command_ =
        app.add_subcommand("models", "List the built-in model tables, or one model's operations");
    model_.add_to(*command_);
    command_->add_flag("--json", json_, "machine-readable output");
    command_->footer("Examples:\n  convjit models\n  convjit models --model resnet50 --batch 32");
  }

  [[nodiscard]] const std::string& name() const override { return command_->get_name(); }
  [[nodiscard]] bool selected() const override { return command_->parsed(); }

  [[nodiscard]] int run() const override {
    if (json_) {
      nlohmann::json out = nlohmann::json::array();
      if (!model_.given()) {
        for (const auto& m : builtin_models()) {
          int convs = 0;
          for (const auto& l : m.layers) convs += l.is_conv() ? l.count : 0;
          out.push_back({{"name", m.name},
                         {"convs", convs},
                         {"image_size", m.default_image_size},
                         {"description", m.description}});
        }
      } else {
        for (const ModelOp& op : model_.expand()) {
          nlohmann::json j = descriptor_json(op.desc);
          j["layer"] = op.layer, j["count"] = op.count;
          out.push_back(std::move(j));
        }
      }
      fmt::print("{}\n", out.dump(2));
      return kExitOk;
    }
    if (!model_.given()) {
      fmt::print("{:<11} {:>6} {:>6}  {}\n", "model", "convs", "image", "description");
      for (const auto& m : builtin_models()) {
        int convs = 0;
        for (const auto& l : m.layers) convs += l.is_conv() ? l.count : 0;
        fmt::print("{:<11} {:>6} {:>6}  {}\n", m.name, convs, m.default_image_size, m.description);
      }
      return kExitOk;
    }
    for (const ModelOp& op : model_.expand())
      fmt::print("{:<28} x{:<3} {}\n", op.layer, op.count, descriptor_name(op.desc));
    return kExitOk;
  }

 private:
  CLI::App* command_ = nullptr;
  ModelFlags model_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_models_command(CLI::App& app) {
  return std::make_unique<ModelsCommand>(app);
}

}  // namespace convjit::cli
