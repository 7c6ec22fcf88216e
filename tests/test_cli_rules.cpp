// `convjit rules`, `query` and `run` with rules files, driven as a user
// would: check and match report what each rule selects and which select
// nothing; query shows the JIT variants a deny leaves for an architecture
// no GPU here has (CONVJIT_ARCH); a run of YOLO11n serves the depthwise
// convs a rule forces onto the reference there and nowhere else; and with
// verbose on, rules that never fired are named at exit.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "support/spawned_process.hpp"

namespace {

using convjit::test::Outcome;

Outcome convjit(const std::string& env, const std::string& args) {
  return convjit::test::spawn(env + " " + std::string(CONVJIT_CLI_PATH) + " " + args);
}

// A rules file under the test's temporary directory.
std::string rules_file(const std::string& name, const std::string& rules) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << R"({"version": 1, "rules": [)" + rules + "]}";
  return path;
}

TEST(CliRules, CheckAcceptsAGoodFileAndNamesTheKeyOfABadOne) {
  const std::string good = rules_file("good.json", R"({"id": "a", "match": {}, "deny": "jit"})");
  Outcome r = convjit("", "rules check " + good);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 rules, valid"), std::string::npos) << r.output;
  const std::string bad =
      rules_file("bad.json", R"({"id": "a", "match": {"op": "conv", "strde": 2}, "deny": "jit"})");
  r = convjit("", "rules check " + bad);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("bad.json: rule 0 (a): unknown match key 'strde'"), std::string::npos)
      << r.output;
  r = convjit("", "rules check /nonexistent/rules.json");
  EXPECT_EQ(r.exit_code, 1) << r.output;
}

TEST(CliRules, MatchListsWhatEachRuleSelectsAndTheRulesThatSelectNothing) {
  const std::string path = rules_file(
      "match.json", R"({"id": "dw", "query": "conv2d[@depthwise=true]", "force": "reference"},
                                  {"id": "typo", "match": {"op": "conv", "groups": 7}, "deny": "jit"})");
  const Outcome r = convjit("", "rules match " + path + " --model yolo11n --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["rules"].size(), 2u);
  // YOLO11n's depthwise convs, each in three directions.
  EXPECT_GT(j["rules"][0]["matches"].size(), 0u);
  EXPECT_EQ(j["rules"][0]["matches"].size() % 3, 0u);
  for (const auto& name : j["rules"][0]["matches"])
    EXPECT_EQ(name.get<std::string>().rfind("conv2d_", 0), 0u) << name;
  EXPECT_EQ(j["rules"][1]["matches"].size(), 0u);
  EXPECT_EQ(j["match_nothing"], nlohmann::json({path + ":1 typo"}));
  EXPECT_EQ(convjit("", "rules match " + path).exit_code, 2);  // nothing to match against
}

// A bf16 conv on sm_80, which no GPU here has: denying `direct` leaves the
// tensor-core tiles, and the JIT would build the first of them.
TEST(CliRules, QueryShowsTheJitVariantsADenyLeavesForAnArchitecture) {
  const std::string path =
      rules_file("query.json", R"({"id": "no-direct", "match": {"op": "conv", "arch": "sm_80"},
                                   "deny": "jit[direct]"})");
  const Outcome r =
      convjit("CONVJIT_ARCH=sm_80 CONVJIT_RULES=" + path,
              "query conv --x 8,64,28,28 --w 64,64,3,3 --pad 1,1 --dtype bf16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto cuda = nlohmann::json::parse(r.output)["cuda"];
  EXPECT_EQ(cuda["arch"], "sm_80");
  ASSERT_EQ(cuda["rules"].size(), 1u);
  EXPECT_NE(cuda["rules"][0].get<std::string>().find("no-direct"), std::string::npos);
  int tensor_core = 0;
  for (const auto& v : cuda["jit_variants"]) {
    const std::string id = v["id"];
    EXPECT_EQ(v["denied_by"] != "", id == "direct") << id;
    tensor_core += id.rfind("tc", 0) == 0;
  }
  EXPECT_GT(tensor_core, 0) << r.output;
  EXPECT_EQ(cuda["jit_choice"].get<std::string>().rfind("tc", 0), 0u) << r.output;
  // The host matches nothing (the rule asks for an architecture).
  EXPECT_EQ(nlohmann::json::parse(r.output)["host"]["rules"].size(), 0u);
}

// Every other op is served as it is without the rules (oneDNN or the
// reference, whichever serves the host in this build).
TEST(CliRules, RunServesYoloDepthwiseConvsWithTheForcedReferenceOnly) {
  const std::string path = rules_file(
      "dw.json",
      R"({"id": "ref-dw", "match": {"op": "conv", "depthwise": true}, "force": "reference"})");
  const std::string args = "run --model yolo11n --imgsz 64 --json";
  const Outcome plain = convjit("", args);
  const Outcome r = convjit("CONVJIT_RULES=" + path, args);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, std::string> unruled;
  const auto plain_report = nlohmann::json::parse(plain.output);
  for (const auto& op : plain_report["ops"]) unruled[op["descriptor"]] = op["backend"];
  int forced = 0;
  const auto report = nlohmann::json::parse(r.output);
  for (const auto& op : report["ops"]) {
    const std::string name = op["descriptor"], why = op["why"];
    if (why.find("forced by rule " + path + ":0 ref-dw") != std::string::npos) {
      EXPECT_EQ(op["backend"], "reference") << name;
      ++forced;
    } else {
      EXPECT_EQ(op["backend"], unruled[name]) << name << ": " << why;
    }
  }
  EXPECT_GT(forced, 0);
  const Outcome m = convjit("", "rules match " + path + " --model yolo11n --imgsz 64 --json");
  EXPECT_EQ(nlohmann::json::parse(m.output)["rules"][0]["matches"].size(),
            static_cast<std::size_t>(forced));
}

// The README's example file stays valid, and each of its rules selects
// something of ResNet-50 on an A100 (its library directory made here).
TEST(CliRules, TheReadmesExampleIsValidAndEachRuleSelectsSomething) {
  std::stringstream readme;
  readme << std::ifstream(CONVJIT_README_PATH).rdbuf();
  const std::string text = readme.str();
  const std::size_t section = text.find("## Rules");
  const std::size_t begin = text.find("```json\n", section);
  ASSERT_NE(begin, std::string::npos);
  const std::size_t end = text.find("```", begin + 8);
  std::string doc = text.substr(begin + 8, end - begin - 8);
  const std::string dir = ::testing::TempDir() + "readme-rules-libs";
  std::filesystem::create_directories(dir);
  for (std::size_t at = doc.find("/opt/mine"); at != std::string::npos; at = doc.find("/opt/mine"))
    doc.replace(at, 9, dir);
  const std::string path = ::testing::TempDir() + "readme-rules.json";
  std::ofstream(path) << doc;
  const Outcome r =
      convjit("", "rules match " + path + " --model resnet50 --device cuda --arch sm_80 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j["rules"].size(), 3u);
  EXPECT_EQ(j["match_nothing"].size(), 0u) << r.output;
}

TEST(CliRules, VerboseNamesTheRulesThatNeverFiredAtExit) {
  const std::string path =
      rules_file("idle.json", R"({"id": "fires", "match": {"op": "conv"}, "prefer": "reference"},
                                 {"id": "never", "match": {"op": "resize"}, "deny": "jit"})");
  const Outcome r = convjit("CONVJIT_VERBOSE=1 CONVJIT_RULES=" + path, "run --batch 1 --imgsz 16");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("info,rule_never_fired," + path + ":1 never"), std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("rule_never_fired," + path + ":0"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(",rule,"), std::string::npos);
}

}  // namespace
