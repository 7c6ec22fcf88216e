// `convjit rules check FILE...` validates rules files; `convjit rules match
// FILE... (--model NAME | --record FILE.jsonl)` lists which descriptors each
// rule selects, and which rules select none: a typo in a match shows up as a
// rule that matches nothing (YAX's silent empty query is the lesson).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "cli_status.hpp"
#include "command.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/rules/rule_set.hpp"
#include "dispatcher/settings.hpp"
#include "model_flags.hpp"
#include "record_file.hpp"

namespace convjit::cli {

namespace {

std::shared_ptr<rules::RuleSet> load_rules(const std::vector<std::string>& files) {
  auto loaded = rules::RuleSet::load(files);
  if (!loaded.is_ok()) {
    // An unreadable file is a runtime failure; a malformed one bad input.
    if (loaded.status().code() == CONVJIT_STATUS_NOT_AVAILABLE)
      throw RuntimeError(loaded.status().message());
    throw UsageError(loaded.status().message());
  }
  return std::move(loaded).value();
}

class RulesCommand final : public Command {
 public:
  explicit RulesCommand(CLI::App& app) {
    command_ =
        app.add_subcommand("rules", "Check rules files and see which calls their rules select");
    command_->require_subcommand(1);
    check_ =
        command_->add_subcommand("check", "Validate rules files (all errors name file, rule, key)");
    check_->add_option("files", files_, "rules files, applied in order")->required();
    match_ = command_->add_subcommand(
        "match", "List the descriptors each rule selects, and the rules that select none");
    match_->add_option("files", files_, "rules files, applied in order")->required();
    match_->add_option("--record", records_, "a CONVJIT_RECORD file (JSON lines)");
    model_.add_to(*match_);
    match_->add_option("--device", device_, "the device the calls run on")
        ->check(CLI::IsMember({"host", "cuda"}));
    match_->add_option("--arch", arch_, "the GPU's architecture for --device cuda (sm_90)");
    match_->add_flag("--json", json_, "machine-readable output");
    command_->footer(
        "Examples:\n"
        "  convjit rules check my_rules.json\n"
        "  convjit rules match my_rules.json --model yolo11n --layout nhwc --device cuda --arch "
        "sm_90\n"
        "  convjit rules match my_rules.json --record run.jsonl");
  }

  [[nodiscard]] const std::string& name() const override { return command_->get_name(); }
  [[nodiscard]] bool selected() const override { return command_->parsed(); }
  [[nodiscard]] int run() const override {
    const auto set = load_rules(files_);
    if (check_->parsed()) {
      fmt::print("{}: {} rules, valid\n", fmt::join(files_, ", "), set->rules().size());
      return kExitOk;
    }
    return match(*set);
  }

 private:
  std::vector<OpDescriptor> descriptors() const {
    if (!model_.given() && records_.empty())
      throw UsageError("rules match: give --model NAME (or --table FILE) or --record FILE");
    std::vector<OpDescriptor> ops;
    std::set<std::string> seen;
    const auto add = [&](const OpDescriptor& d) {
      if (seen.insert(descriptor_name(d)).second) ops.push_back(d);
    };
    if (model_.given())
      for (const ModelOp& op : model_.expand()) add(op.desc);
    std::vector<std::string> problems;
    for (const std::string& record : records_)
      for (const std::string& n : read_record_file(record, problems))
        if (auto d = parse_descriptor_name(n); d.is_ok()) add(d.value());
    for (const std::string& p : problems) fmt::print(stderr, "convjit: warning: {}\n", p);
    return ops;
  }

  rules::CallFacts facts(const OpDescriptor& d) const {
    const convjit_device_t device{device_ == "cuda" ? CONVJIT_DEVICE_CUDA : CONVJIT_DEVICE_HOST, 0};
    rules::CallFacts f = rules::call_facts(d, device);
    if (!arch_.empty()) f.arch = arch_;
    return f;
  }

  int match(const rules::RuleSet& set) const {
    if (!arch_.empty() && device_ != "cuda") throw UsageError("--arch needs --device cuda");
    const auto ops = descriptors();
    std::vector<std::vector<std::string>> selected(set.rules().size());
    for (const OpDescriptor& d : ops)
      for (const rules::Rule* rule : set.preview(facts(d)).matched)
        selected[static_cast<std::size_t>(rule - set.rules().data())].push_back(descriptor_name(d));
    std::vector<std::string> idle;
    for (std::size_t i = 0; i < selected.size(); ++i)
      if (selected[i].empty()) idle.push_back(set.rules()[i].where());
    if (json_) {
      nlohmann::json j = {
          {"descriptors", ops.size()}, {"rules", nlohmann::json::array()}, {"match_nothing", idle}};
      for (std::size_t i = 0; i < selected.size(); ++i)
        j["rules"].push_back({{"rule", set.rules()[i].where()}, {"matches", selected[i]}});
      fmt::print("{}\n", j.dump(2));
      return kExitOk;
    }
    fmt::print("{} distinct descriptors on {}\n", ops.size(), device_);
    for (std::size_t i = 0; i < selected.size(); ++i) {
      fmt::print("rule {}: {} match\n", set.rules()[i].where(), selected[i].size());
      for (const std::string& n : selected[i]) fmt::print("  {}\n", n);
    }
    if (!idle.empty()) fmt::print("match nothing: {}\n", fmt::join(idle, ", "));
    return kExitOk;
  }

  CLI::App* command_ = nullptr;
  CLI::App* check_ = nullptr;
  CLI::App* match_ = nullptr;
  std::vector<std::string> files_;
  std::vector<std::string> records_;
  ModelFlags model_;
  std::string device_ = "host";
  std::string arch_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_rules_command(CLI::App& app) {
  return std::make_unique<RulesCommand>(app);
}

}  // namespace convjit::cli
