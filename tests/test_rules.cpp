// Rules files (dispatcher/rules/rule_set.hpp) in the dispatcher's decision:
// every action (deny a backend or a variant, force, prefer, tune) on a
// chain of stand-in backends named as the real ones; precedence within and
// across files; the policy's say; the hash in tuning decisions; the log;
// the process-wide setting through the C API on the real chain; and every
// malformed file rejected naming the file, the rule and the key.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cache/tuning_decisions.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/onednn/onednn_library.hpp"
#include "dispatcher/backends/reference/reference_backend.hpp"
#include "dispatcher/descriptor/descriptor_builder.hpp"
#include "dispatcher/dispatcher.hpp"
#include "dispatcher/rules/rule_set.hpp"
#include "support/host_device.hpp"
#include "support/problems.hpp"
#include "support/temp_directory.hpp"

namespace convjit::test {
namespace {

namespace fs = std::filesystem;

class ReferenceKernel final : public Kernel {
 public:
  explicit ReferenceKernel(const OpDescriptor& desc) : desc_(desc) {}
  Status execute(const ExecArgs& args) const override {
    run_reference(desc_, args);
    return Status::ok();
  }

 private:
  OpDescriptor desc_;
};

// A stand-in for a real backend, under its name: it offers `variants` (the
// first is build()'s choice), lists them through variant_ids() when
// `lists_ids`, and declines every call when `declines`.  Records each build.
class StandIn final : public Backend {
 public:
  StandIn(std::string_view name, std::vector<std::string> variants, bool lists_ids,
          std::vector<std::string>& built, bool declines = false)
      : name_(name),
        variants_(std::move(variants)),
        lists_ids_(lists_ids),
        built_(built),
        declines_(declines) {}
  std::string_view name() const override { return name_; }
  Status check_support(const OpDescriptor&, const convjit_device_t&) const override {
    return declines_ ? Status::unsupported("declines everything") : Status::ok();
  }
  Result<std::unique_ptr<Kernel>> build(const OpDescriptor& desc, const convjit_device_t& device,
                                        BuildTrace& trace) override {
    return build_variant(desc, device, variants_.empty() ? "" : variants_.front(), trace);
  }
  std::optional<std::vector<std::string>> variant_ids(const OpDescriptor&,
                                                      const convjit_device_t&) const override {
    if (!lists_ids_) return std::nullopt;
    return variants_;
  }
  Result<std::vector<KernelVariant>> build_variants(const OpDescriptor& desc,
                                                    const convjit_device_t& device,
                                                    BuildTrace& trace) override {
    if (variants_.empty()) return Backend::build_variants(desc, device, trace);
    return build_each_variant(
        variants_, [&](const std::string& id) { return build_variant(desc, device, id, trace); });
  }
  Result<std::unique_ptr<Kernel>> build_variant(const OpDescriptor& desc, const convjit_device_t&,
                                                std::string_view id, BuildTrace& trace) override {
    built_.push_back(variant_label(name_, id));
    trace.variant = std::string(id);
    return std::unique_ptr<Kernel>(std::make_unique<ReferenceKernel>(desc));
  }

 private:
  std::string_view name_;
  std::vector<std::string> variants_;
  bool lists_ids_;
  std::vector<std::string>& built_;
  bool declines_;
};

// The default chain's names: the JIT lists its variants, cuDNN only builds
// them (as the real ones do).
std::vector<std::unique_ptr<Backend>> stand_in_chain(std::vector<std::string>& built,
                                                     bool jit_declines = false) {
  const std::string tile(gemm_tiles().front().id);
  std::vector<std::unique_ptr<Backend>> chain;
  chain.push_back(std::make_unique<StandIn>("jit", std::vector<std::string>{"direct", tile}, true,
                                            built, jit_declines));
  chain.push_back(std::make_unique<StandIn>(
      "cudnn", std::vector<std::string>{"algo1-tensor-op", "algo1-fma", "algo0-fma"}, false,
      built));
  chain.push_back(std::make_unique<StandIn>(
      "onednn", std::vector<std::string>{"strided", "blocked"}, true, built));
  chain.push_back(std::make_unique<StandIn>("reference", std::vector<std::string>{}, false, built));
  return chain;
}

OpDescriptor conv(std::int64_t groups = 1) {
  auto t = make_conv_tensors<float>({1, 4, 4, groups, {8, 8}, {3, 3}, {1, 1}, {1, 1}});
  auto x = t.x.desc(), w = t.w.desc(), y = t.y.desc();
  return make_conv_descriptor(&t.params, Direction::fwd, &x, &w, &y).value();
}

// Rules files written for one test, set process-wide for its scope.
class RulesScope {
 public:
  explicit RulesScope(const std::vector<std::string>& documents) {
    std::string list;
    for (std::size_t i = 0; i < documents.size(); ++i) {
      const std::string path = (fs::path(dir_.path()) / fmt::format("r{}.json", i)).string();
      std::ofstream(path) << documents[i];
      list += (list.empty() ? "" : ":") + path;
    }
    status_ = convjit_set_rules_file(list.c_str());
  }
  ~RulesScope() { (void)convjit_set_rules_file(nullptr); }
  [[nodiscard]] convjit_status_t status() const { return status_; }

 private:
  TempDirectory dir_{"convjit-rules"};
  convjit_status_t status_;
};

std::string rules_doc(const std::string& rules) {
  return R"({"version": 1, "rules": [)" + rules + "]}";
}

struct Decided {
  std::string label;  // backend[variant]
  std::string reason;
  std::string error;
};

Decided decide(Dispatcher& d, const OpDescriptor& desc) {
  auto r = d.choose(desc, kHost);
  if (!r.is_ok()) return {"", "", r.status().message()};
  return {variant_label(r.value().backend, r.value().variant), r.value().reason, ""};
}

Decided decide_under(const std::string& rules, const OpDescriptor& desc,
                     std::vector<std::string>* built = nullptr, bool jit_declines = false) {
  const RulesScope scope({rules_doc(rules)});
  EXPECT_EQ(scope.status(), CONVJIT_STATUS_SUCCESS) << convjit_last_error_message();
  std::vector<std::string> local;
  Dispatcher d(stand_in_chain(built ? *built : local, jit_declines));
  return decide(d, desc);
}

TEST(RulesDispatch, WithoutRulesTheChainDecides) {
  std::vector<std::string> built;
  Dispatcher d(stand_in_chain(built));
  EXPECT_EQ(decide(d, conv()).label, "jit[direct]");
}

TEST(RulesDispatch, DenyAVariantBuildsTheNextListedOneOnly) {
  std::vector<std::string> built;
  const std::string tile(gemm_tiles().front().id);
  const auto d = decide_under(R"({"id": "no-direct", "match": {"op": "conv"},
                                  "deny": "jit[direct]"})",
                              conv(), &built);
  EXPECT_EQ(d.label, "jit[" + tile + "]") << d.error;
  EXPECT_EQ(built, std::vector<std::string>{"jit[" + tile + "]"});  // direct never built
}

TEST(RulesDispatch, DenyABackendMovesOnAndSaysWhy) {
  const auto d = decide_under(R"({"id": "no-jit", "match": {}, "deny": ["jit"]})", conv());
  EXPECT_EQ(d.label, "cudnn[algo1-tensor-op]") << d.error;
  EXPECT_NE(d.reason.find("jit: denied by rule"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("r0.json:0 no-jit"), std::string::npos) << d.reason;
}

TEST(RulesDispatch, DenyACudnnAlgorithmByNumberCoversEveryMathType) {
  const auto d = decide_under(R"({"id": "a", "match": {}, "deny": ["jit",
                                  {"backend": "cudnn", "algorithm": 1}]})",
                              conv());
  EXPECT_EQ(d.label, "cudnn[algo0-fma]") << d.error;
}

TEST(RulesDispatch, DenyEveryBackendIsAnErrorNamingTheRules) {
  const auto d = decide_under(
      R"({"id": "none", "match": {}, "deny": ["jit", "cudnn", "onednn", "reference"]})", conv());
  EXPECT_TRUE(d.label.empty());
  EXPECT_NE(d.error.find("denied by rule"), std::string::npos) << d.error;
}

TEST(RulesDispatch, ForceServesWithTheTargetAndSaysWhichRule) {
  auto d = decide_under(R"({"id": "ref", "match": {"op": "conv"}, "force": "reference"})", conv());
  EXPECT_EQ(d.label, "reference") << d.error;
  EXPECT_NE(d.reason.find("forced by rule"), std::string::npos);
  d = decide_under(R"({"id": "blk", "match": {}, "force": "onednn[blocked]"})", conv());
  EXPECT_EQ(d.label, "onednn[blocked]") << d.error;
  d = decide_under(R"({"id": "algo", "match": {}, "force": {"backend": "cudnn", "algorithm": 0}})",
                   conv());
  EXPECT_EQ(d.label, "cudnn[algo0-fma]") << d.error;
}

TEST(RulesDispatch, ForceOfADecliningBackendFailsOrFallsBack) {
  auto d = decide_under(R"({"id": "j", "match": {}, "force": "jit"})", conv(), nullptr, true);
  EXPECT_TRUE(d.label.empty());
  EXPECT_NE(d.error.find("rule"), std::string::npos);
  EXPECT_NE(d.error.find("forces jit, which cannot serve"), std::string::npos) << d.error;
  EXPECT_NE(d.error.find("declines everything"), std::string::npos) << d.error;
  d = decide_under(R"({"id": "j", "match": {}, "force": "jit", "on_unavailable": "fallback"})",
                   conv(), nullptr, true);
  EXPECT_EQ(d.label, "cudnn[algo1-tensor-op]") << d.error;
}

TEST(RulesDispatch, PreferTriesTheTargetsFirstInOrder) {
  auto d = decide_under(R"({"id": "p", "match": {}, "prefer": ["reference", "onednn"]})", conv());
  EXPECT_EQ(d.label, "reference") << d.error;
  EXPECT_NE(d.reason.find("preferred by rule"), std::string::npos);
  d = decide_under(R"({"id": "p", "match": {}, "prefer": "cudnn[algo0-fma]"})", conv());
  EXPECT_EQ(d.label, "cudnn[algo0-fma]") << d.error;
}

TEST(RulesDispatch, ARuleActsOnlyOnTheCallsItMatches) {
  const std::string rule = R"({"id": "grouped", "match": {"groups": {"min": 2}},
                               "force": "reference"})";
  EXPECT_EQ(decide_under(rule, conv(1)).label, "jit[direct]");
  EXPECT_EQ(decide_under(rule, conv(2)).label, "reference");
}

TEST(RulesDispatch, AcrossFilesDeniesAddUpAndTheFirstForceWins) {
  const RulesScope scope({rules_doc(R"({"id": "a", "match": {}, "deny": "jit"},
                                       {"id": "b", "match": {}, "force": "onednn"})"),
                          rules_doc(R"({"id": "a", "match": {}, "deny": "cudnn"},
                                       {"id": "c", "match": {}, "force": "reference"})")});
  ASSERT_EQ(scope.status(), CONVJIT_STATUS_SUCCESS) << convjit_last_error_message();
  std::vector<std::string> built;
  Dispatcher d(stand_in_chain(built));
  EXPECT_EQ(decide(d, conv()).label, "onednn[strided]");
}

TEST(RulesDispatch, AForceDeniedForTheCallIsAnError) {
  // Different matches, so only the call shows they overlap.
  const auto d = decide_under(R"({"id": "f", "match": {"op": "conv"}, "force": "onednn"},
                                 {"id": "d", "match": {"groups": 1}, "deny": "onednn"})",
                              conv());
  EXPECT_NE(d.error.find("rule"), std::string::npos);
  EXPECT_NE(d.error.find("forces onednn, which rule"), std::string::npos) << d.error;
}

TEST(RulesDispatch, ThePolicyStillBoundsTheRules) {
  const RulesScope scope({rules_doc(R"({"id": "j", "match": {}, "force": "jit"})")});
  ASSERT_EQ(scope.status(), CONVJIT_STATUS_SUCCESS);
  ASSERT_EQ(convjit_set_policy("reference"), CONVJIT_STATUS_SUCCESS);
  std::vector<std::string> built;
  Dispatcher d(stand_in_chain(built));
  const auto decided = decide(d, conv());
  (void)convjit_set_policy(nullptr);
  EXPECT_NE(decided.error.find("policy reference excludes it"), std::string::npos) << decided.error;
}

// Tuning under a rule (`tune` under auto) measures only what the rules
// leave and stores the decision under the rules' hash: a run without the
// rules neither reads it nor overwrites it.
TEST(RulesDispatch, TuneMeasuresWhatTheRulesLeaveUnderTheirOwnKey) {
  TempDirectory cache("convjit-rules-cache");
  ASSERT_EQ(convjit_set_cache_path(cache.path().string().c_str()), CONVJIT_STATUS_SUCCESS);
  std::vector<std::string> built;
  {
    const RulesScope scope({rules_doc(
        R"({"id": "t", "match": {}, "tune": true, "deny": ["jit", "cudnn", "onednn[strided]"]})")});
    ASSERT_EQ(scope.status(), CONVJIT_STATUS_SUCCESS) << convjit_last_error_message();
    Dispatcher d(stand_in_chain(built));
    const auto decided = decide(d, conv());
    EXPECT_TRUE(decided.label == "onednn[blocked]" || decided.label == "reference")
        << decided.label << decided.error;
    EXPECT_NE(decided.reason.find("measured"), std::string::npos) << decided.reason;
  }
  for (const std::string& b : built) EXPECT_EQ(b.find("jit"), std::string::npos) << b;
  std::vector<fs::path> stored;
  for (const auto& e : fs::recursive_directory_iterator(cache.path()))
    if (e.is_regular_file()) stored.push_back(e.path());
  ASSERT_EQ(stored.size(), 1u);
  std::stringstream text;
  text << std::ifstream(stored.front()).rdbuf();
  EXPECT_NE(text.str().find("rules="), std::string::npos);
  // Without the rules, auto walks the chain: the stored decision is not its key's.
  Dispatcher plain(stand_in_chain(built));
  EXPECT_EQ(decide(plain, conv()).label, "jit[direct]");
  (void)convjit_set_cache_path(nullptr);
}

TEST(RulesTuningKey, TheRulesHashChangesTheKeyAndItsAbsenceKeepsTheOldOne) {
  TuningKeyFields f{"conv2d_x", "host", "", "", "", "", "0.1.0", ""};
  const TuningKey plain = make_tuning_key(f);
  EXPECT_EQ(plain.preimage.find("rules="), std::string::npos);
  f.rules = "abc";
  const TuningKey ruled = make_tuning_key(f);
  EXPECT_NE(ruled.relative_path, plain.relative_path);
  f.rules = "abd";
  EXPECT_NE(make_tuning_key(f).relative_path, ruled.relative_path);
}

TEST(RulesLog, TheVerboseLogNamesTheRuleWhatItMatchedAndDid) {
  TempDirectory dir("convjit-rules-log");
  const std::string log = dir.path().string() + "/log.txt";
  ASSERT_EQ(convjit_set_log_file(log.c_str()), CONVJIT_STATUS_SUCCESS);
  ASSERT_EQ(convjit_set_verbose(1), CONVJIT_STATUS_SUCCESS);
  const auto d = decide_under(R"({"id": "no-direct", "match": {"op": "conv"},
                                  "deny": "jit[direct]"})",
                              conv());
  (void)convjit_set_verbose(-1);
  (void)convjit_set_log_file(nullptr);
  std::stringstream text;
  text << std::ifstream(log).rdbuf();
  EXPECT_NE(text.str().find(",rule,"), std::string::npos) << text.str();
  EXPECT_NE(text.str().find("r0.json:0 no-direct: matched op=conv; denies jit[direct]"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("jit[direct] is denied by rule"), std::string::npos) << text.str();
}

// The real chain, through the C API: setting rules changes how new calls
// resolve (the rules epoch is part of the key), unsetting restores it.
TEST(RulesApi, SettingRulesChangesResolutionsOfTheSameCall) {
  if (!OnednnLibrary::instance().available().is_ok())
    GTEST_SKIP() << "oneDNN, which serves the call without rules, is not available";
  auto t = make_conv_tensors<float>({1, 4, 4, 1, {8, 8}, {3, 3}, {1, 1}, {1, 1}});
  const auto run = [&] {
    EXPECT_TRUE(conv_forward(t.params, t.x.desc(), t.x.data(), t.w.desc(), t.w.data(), t.y.desc(),
                             t.y.data())
                    .is_ok());
    return std::string(convjit_last_backend());
  };
  const std::string before = run();
  ASSERT_EQ(before, "onednn");
  {
    const RulesScope scope({rules_doc(R"({"id": "r", "match": {}, "force": "reference"})")});
    ASSERT_EQ(scope.status(), CONVJIT_STATUS_SUCCESS);
    EXPECT_EQ(run(), "reference");
  }
  EXPECT_EQ(run(), before);
}

TEST(RulesApi, ABadFileIsRefusedAndTheRulesInForceStay) {
  const RulesScope good({rules_doc(R"({"id": "r", "match": {}, "force": "reference"})")});
  ASSERT_EQ(good.status(), CONVJIT_STATUS_SUCCESS);
  EXPECT_EQ(convjit_set_rules_file("/nonexistent/rules.json"), CONVJIT_STATUS_NOT_AVAILABLE);
  EXPECT_NE(std::string(convjit_last_error_message()).find("/nonexistent/rules.json"),
            std::string::npos);
  Dispatcher& d = Dispatcher::instance();
  EXPECT_EQ(decide(d, conv()).label, "reference");
}

// Every malformed file is refused, naming the file, the rule and the key.
TEST(RulesFile, MalformedFilesAreRejectedNamingFileRuleAndKey) {
  const struct {
    std::string doc, wanted;
  } cases[] = {
      {"not json", "not valid JSON"},
      {R"({"version": 2, "rules": []})", "version 2 is not supported"},
      {R"({"version": 1, "rules": [], "extra": 1})", "unknown key 'extra'"},
      {rules_doc(R"({"match": {}, "deny": "jit"})"), "rule 0: needs an \"id\""},
      {rules_doc(R"({"id": "a", "match": {}, "deni": "jit"})"), "rule 0 (a): unknown key 'deni'"},
      {rules_doc(R"({"id": "a", "deny": "jit"})"), "give \"match\""},
      {rules_doc(R"({"id": "a", "match": {}, "query": "conv", "deny": "jit"})"), "give \"match\""},
      {rules_doc(R"({"id": "a", "match": {"grups": 2}, "deny": "jit"})"),
       "unknown match key 'grups'"},
      {rules_doc(R"({"id": "a", "match": {"groups": {"min": 4, "mx": 9}}, "deny": "jit"})"), "mx"},
      {rules_doc(R"({"id": "a", "match": {"groups": {"min": 9, "max": 2}}, "deny": "jit"})"),
       "min 9 above max 2"},
      {rules_doc(R"({"id": "a", "match": {}})"), "does nothing"},
      {rules_doc(R"({"id": "a", "match": {}, "deny": "cuda"})"), "unknown backend 'cuda'"},
      {rules_doc(R"({"id": "a", "match": {}, "deny": "jit[directt]"})"),
       "the JIT has no variant 'directt'"},
      {rules_doc(R"({"id": "a", "match": {}, "deny": "cudnn[1]"})"), "not a cuDNN variant id"},
      {rules_doc(R"({"id": "a", "match": {}, "deny": "reference[x]"})"), "has no variants"},
      {rules_doc(R"({"id": "a", "match": {}, "deny": {"backend": "jit", "algorithm": 1}})"),
       "names a cuDNN algorithm"},
      {rules_doc(R"({"id": "a", "match": {}, "force": {"library": "/nonexistent/libx.so"}})"),
       "library path '/nonexistent/libx.so' does not exist"},
      {rules_doc(R"({"id": "a", "match": {}, "force": {"library": "relative/libx.so"}})"),
       "must be absolute"},
      {rules_doc(
           R"({"id": "a", "match": {}, "force": {"library": "/nonexistent/lib{descriptor}.so"}})"),
       "library directory '/nonexistent/' does not exist"},
      {rules_doc(R"({"id": "a", "match": {}, "deny": "jit", "on_unavailable": "fallback"})"),
       "qualifies a \"force\""},
      {rules_doc(R"({"id": "a", "match": {}, "force": "jit", "on_unavailable": "maybe"})"),
       "\"error\" or \"fallback\""},
      {rules_doc(R"({"id": "a", "match": {}, "tune": false})"), "\"tune\" takes true"},
      {rules_doc(R"({"id": "a", "match": {}, "deny": []})"), "empty list"},
      {rules_doc(
           R"({"id": "a", "match": {}, "deny": "jit"}, {"id": "a", "match": {}, "deny": "cudnn"})"),
       "id 'a' is already taken"},
      {rules_doc(R"({"id": "a", "match": {}, "force": "jit", "deny": "jit"})"),
       "forces jit and denies it too"},
      {rules_doc(R"({"id": "f", "match": {"op": "conv"}, "force": "jit[direct]"},
                    {"id": "d", "match": {}, "deny": "jit"})"),
       "forces jit[direct], which rule"},
  };
  for (const auto& c : cases) {
    auto set = rules::RuleSet::parse(c.doc, "bad.json");
    ASSERT_FALSE(set.is_ok()) << c.doc;
    EXPECT_NE(set.status().message().find(c.wanted), std::string::npos)
        << c.doc << "\n  gave: " << set.status().message();
    EXPECT_NE(set.status().message().find("bad.json"), std::string::npos) << set.status().message();
  }
}

TEST(RulesFile, EveryTargetFormAndTheBackendsOfTheRealChain) {
  TempDirectory dir("convjit-rules-lib");
  std::ofstream(dir.path() / "libx.so") << "";
  const std::string doc = rules_doc(R"({"id": "a", "query": "conv2d[@groups>1]",
      "deny": ["jit[direct]", "cudnn[algo1-tensor-op]", {"backend": "cudnn", "algorithm": 7},
               {"backend": "onednn", "variant": "blocked"}, "tuned-library"],
      "prefer": ["reference"], "comment": "anything"},
     {"id": "b", "match": {"op": "pool"}, "force": {"library": ")" +
                                    dir.path().string() + R"(/libx.so"}, "tune": true})");
  auto set = rules::RuleSet::parse(doc, "good.json");
  ASSERT_TRUE(set.is_ok()) << set.status().message();
  EXPECT_EQ(set.value()->rules().size(), 2u);
  EXPECT_EQ(set.value()->rules()[0].deny.size(), 5u);
  EXPECT_EQ(set.value()->never_fired().size(), 2u);
  for (std::string_view name : Dispatcher::instance().backend_names()) {
    auto one = rules::RuleSet::parse(
        rules_doc(R"({"id": "a", "match": {}, "deny": ")" + std::string(name) + R"("})"), "n.json");
    EXPECT_TRUE(one.is_ok()) << name << ": " << one.status().message();
  }
}

}  // namespace
}  // namespace convjit::test
