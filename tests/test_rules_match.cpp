// Which calls a rule selects (dispatcher/rules/call_match.hpp): every field
// against descriptors of the reference models and hand-made ones, every
// value form ("*", exact, in, min/max, one value per spatial dim), tokens
// matched whole (never by substring), versions and architectures as the
// loaded libraries report them, the query form against the JSON form, and
// every malformed match rejected naming the rule and the key.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/rules/call_match.hpp"
#include "support/jit_problem_set.hpp"

namespace convjit::rules {
namespace {

constexpr const char* kWhere = "rules.json rule 1 (test)";

CallFacts facts(const OpDescriptor& d, convjit_device_t device = {CONVJIT_DEVICE_HOST, 0},
                std::string arch = "") {
  CallFacts f;
  f.desc = d;
  f.name = descriptor_name(d);
  f.device = device;
  f.arch = std::move(arch);
  return f;
}

CallMatch parse(const char* json) {
  auto m = CallMatch::from_json(nlohmann::json::parse(json), kWhere);
  EXPECT_TRUE(m.is_ok()) << json << ": " << m.status().message();
  return m.is_ok() ? std::move(m).value() : CallMatch{};
}

std::string error_of(const char* json) {
  auto m = CallMatch::from_json(nlohmann::json::parse(json), kWhere);
  EXPECT_FALSE(m.is_ok()) << json;
  return m.is_ok() ? "" : m.status().message();
}

std::vector<OpDescriptor> yolo(bool channels_last = false) {
  return test::model_descriptors("yolo11n", {1, 64, channels_last}, /*every_op=*/true);
}

int count(const CallMatch& m, const std::vector<OpDescriptor>& ops) {
  int n = 0;
  for (const OpDescriptor& d : ops) n += m.matches(facts(d)) ? 1 : 0;
  return n;
}

TEST(RulesMatch, OpDirectionAndDerivedFlagsSelectTheirCallsOnly) {
  const auto ops = yolo();
  int convs = 0, depthwise = 0, pointwise_bwdfilt = 0, strided_pools = 0, norms = 0;
  for (const OpDescriptor& d : ops) {
    convs += d.is_conv();
    depthwise += d.is_conv() && d.groups > 1 && d.w_dims[1] == 1;
    pointwise_bwdfilt +=
        d.is_conv() && d.direction == Direction::bwdfilt && d.w_dims[2] == 1 && d.w_dims[3] == 1;
    strided_pools += d.is_pool() && (d.stride[0] > 1 || d.stride[1] > 1);
    norms += d.is_batchnorm() && d.direction == Direction::bwd;
  }
  ASSERT_GT(depthwise, 0);
  ASSERT_GT(norms, 0);
  EXPECT_EQ(count(parse(R"({"op": "conv"})"), ops), convs);
  EXPECT_EQ(count(parse(R"({"depthwise": true})"), ops), depthwise);
  EXPECT_EQ(count(parse(R"({"pointwise": true, "dir": "bwdfilt"})"), ops), pointwise_bwdfilt);
  EXPECT_EQ(count(parse(R"({"op": "pool", "strided": true})"), ops), strided_pools);
  EXPECT_EQ(count(parse(R"({"op": {"in": ["batchnorm"]}, "dir": "bwd"})"), ops), norms);
  EXPECT_EQ(count(parse(R"({"op": "*"})"), ops), static_cast<int>(ops.size()));
  EXPECT_EQ(count(parse(R"({})"), ops), static_cast<int>(ops.size()));
  // A field of other op kinds never matches a call of this one.
  EXPECT_EQ(count(parse(R"({"groups": {"min": 1}})"), ops), convs);
}

TEST(RulesMatch, IntegersRangesSetsAndOneValuePerSpatialDim) {
  const auto ops = yolo();
  for (const OpDescriptor& d : ops) {
    if (!d.is_conv()) continue;
    const CallFacts f = facts(d);
    const auto k = d.y_dims[1];
    const auto kh = d.w_dims[2], kw = d.w_dims[3];
    const auto json = [](const std::string& text) { return nlohmann::json::parse(text); };
    auto exact = CallMatch::from_json(json(fmt::format(R"({{"k": {}}})", k)), kWhere).value();
    auto above =
        CallMatch::from_json(json(fmt::format(R"({{"k": {{"min": {}}}}})", k + 1)), kWhere).value();
    auto within = CallMatch::from_json(
                      json(fmt::format(R"({{"k": {{"min": {}, "max": {}}}}})", k, k)), kWhere)
                      .value();
    auto filter =
        CallMatch::from_json(json(fmt::format(R"({{"filter": [{}, {}]}})", kh, kw)), kWhere)
            .value();
    auto swapped =
        CallMatch::from_json(json(fmt::format(R"({{"filter": [{}, {}]}})", kw, kh + 1)), kWhere)
            .value();
    auto every = CallMatch::from_json(json(fmt::format(R"({{"filter": {}}})", kh)), kWhere).value();
    auto three =
        CallMatch::from_json(json(fmt::format(R"({{"filter": [{}, {}, 1]}})", kh, kw)), kWhere)
            .value();
    EXPECT_TRUE(exact.matches(f));
    EXPECT_FALSE(above.matches(f));
    EXPECT_TRUE(within.matches(f));
    EXPECT_TRUE(filter.matches(f));
    EXPECT_FALSE(swapped.matches(f));
    EXPECT_EQ(every.matches(f), kh == kw);
    EXPECT_FALSE(three.matches(f));  // a 2D call has two filter dims
  }
  int expected = 0;
  for (const OpDescriptor& d : ops)
    expected += (d.is_conv() || d.is_pool()) && d.spatial_dims == 2 &&
                (d.stride[0] == 1 || d.stride[0] == 2) && d.stride[1] == 1;
  ASSERT_GT(expected, 0);
  EXPECT_EQ(count(parse(R"({"stride": [{"in": [1, 2]}, 1]})"), ops), expected);
}

TEST(RulesMatch, LayoutDtypeAndDeviceAreClassifiedFromTheDescriptor) {
  const auto first = yolo(false), last = yolo(true);
  EXPECT_EQ(count(parse(R"({"layout": "nchw"})"), first), static_cast<int>(first.size()));
  EXPECT_EQ(count(parse(R"({"layout": "nhwc"})"), last), static_cast<int>(last.size()));
  EXPECT_EQ(count(parse(R"({"layout": "nhwc"})"), first), 0);
  EXPECT_EQ(count(parse(R"({"dtype": "f32"})"), first), static_cast<int>(first.size()));
  EXPECT_EQ(count(parse(R"({"dtype": {"in": ["bf16", "f16"]}})"), first), 0);
  const OpDescriptor& d = first.front();
  EXPECT_TRUE(parse(R"({"device": "cuda"})").matches(facts(d, {CONVJIT_DEVICE_CUDA, 0}, "sm_90")));
  EXPECT_FALSE(parse(R"({"device": "cuda"})").matches(facts(d)));
}

TEST(RulesMatch, NamePatternsMatchWholeTokensNeverSubstrings) {
  const auto ops = yolo();
  const OpDescriptor& d = ops.front();
  const std::string name = descriptor_name(d);
  const CallFacts f = facts(d);
  const auto with = [](const std::string& pattern) {
    return CallMatch::from_json(nlohmann::json{{"name", pattern}}, kWhere).value();
  };
  EXPECT_TRUE(with(name).matches(f));
  EXPECT_TRUE(with("conv2d_*_fwd").matches(f));
  EXPECT_TRUE(with("*").matches(f));
  EXPECT_FALSE(with("conv2d_*_bwdfilt").matches(f));
  // "conv" is a prefix of the first token, not the token.
  EXPECT_FALSE(with("conv_*").matches(f));
  // One token fewer: the last token must be matched whole.
  EXPECT_FALSE(with(name.substr(0, name.size() - 1)).matches(f));
}

TEST(RulesMatch, VersionsAndArchitecturesAsLoaded) {
  CallFacts f = facts(yolo().front(), {CONVJIT_DEVICE_CUDA, 0}, "sm_90a");
  f.cudnn = Version{9, 1, 2};
  EXPECT_TRUE(parse(R"({"cudnn": "9.1"})").matches(f));
  EXPECT_TRUE(parse(R"({"cudnn": {"min": "9.0", "max": "9.1"}})").matches(f));
  EXPECT_FALSE(parse(R"({"cudnn": {"min": "9.2"}})").matches(f));
  EXPECT_FALSE(parse(R"({"cudnn": "9.11"})").matches(f));  // not a prefix of the text
  EXPECT_FALSE(parse(R"({"onednn": "*"})").matches(f));    // not loaded: "*" needs it loaded
  EXPECT_FALSE(parse(R"({"onednn": {"min": "2.0"}})").matches(f));
  EXPECT_TRUE(parse(R"({"arch": {"min": "sm_80"}})").matches(f));
  EXPECT_FALSE(parse(R"({"arch": {"max": "sm_89"}})").matches(f));
  EXPECT_FALSE(parse(R"({"arch": "sm_90"})").matches(f));  // exact is the whole name
  EXPECT_TRUE(parse(R"({"arch": {"in": ["sm_90", "sm_90a"]}})").matches(f));
}

TEST(RulesMatch, QueriesParseIntoTheSameTests) {
  const auto ops = yolo();
  const auto query = [](const char* q) {
    auto m = CallMatch::from_query(q, kWhere);
    EXPECT_TRUE(m.is_ok()) << q << ": " << m.status().message();
    return m.is_ok() ? std::move(m).value() : CallMatch{};
  };
  EXPECT_EQ(
      count(query(R"(conv2d[@dir="bwdfilt"][@groups>1])"), ops),
      count(parse(R"({"op": "conv", "dims": 2, "dir": "bwdfilt", "groups": {"min": 2}})"), ops));
  EXPECT_EQ(count(query(R"(maxpool)"), ops), count(parse(R"({"op": "pool", "pool": "max"})"), ops));
  EXPECT_EQ(count(query(R"(* [ @dtype = "f32" ] [@depthwise=true])"), ops),
            count(parse(R"({"depthwise": true})"), ops));
  EXPECT_EQ(count(query(R"(conv[@k<=64][@k>=64])"), ops),
            count(parse(R"({"op": "conv", "k": 64})"), ops));
  EXPECT_EQ(count(query(R"(conv[@dir!="fwd"])"), ops),
            count(parse(R"({"op": "conv", "dir": {"in": ["bwddata", "bwdfilt"]}})"), ops));
  EXPECT_EQ(query(R"(conv2d[@groups>1])").summary(), "op=conv dims=2 groups >= 2");
}

TEST(RulesMatch, MalformedMatchesAreRejectedNamingTheRuleAndTheKey) {
  const auto has = [](const std::string& message, const char* part) {
    EXPECT_NE(message.find(part), std::string::npos) << message;
  };
  has(error_of(R"({"kernel": 3})"),
      "rules.json rule 1 (test): unknown match key 'kernel'; the keys are op, dir");
  has(error_of(R"({"op": "convolution"})"),
      "match key 'op' = \"convolution\" is not one of \"conv\"");
  has(error_of(R"({"dir": {"min": "fwd"}})"), "match key 'dir' has 'min'");
  has(error_of(R"({"k": {"min": 8, "max": 4}})"), "min 8 above max 4");
  has(error_of(R"({"k": "64"})"), "match key 'k' = \"64\" is not an integer");
  has(error_of(R"({"op": "resize", "filter": 3})"), "'filter' applies to conv and pool only");
  has(error_of(R"({"stride": [1, 1, 1, 1]})"), "has 4 values; give one per spatial dim");
  has(error_of(R"({"cudnn": "nine"})"), "is not a version such as");
  has(error_of(R"({"arch": "ampere"})"), "is not an architecture such as");
  has(error_of(R"([1, 2])"), "\"match\" must be an object");
  const auto query_error = [](const char* q) {
    auto m = CallMatch::from_query(q, kWhere);
    EXPECT_FALSE(m.is_ok()) << q;
    return m.is_ok() ? std::string() : m.status().message();
  };
  has(query_error("convolution[@k=3]"), "'convolution' names no op");
  has(query_error("conv[@kernel=3]"), "unknown field 'kernel'");
  has(query_error("conv[@k~3]"), "expected one of = != < <= > >=");
  has(query_error("conv[@dtype>\"f16\"]"), "'dtype' is not ordered");
  has(query_error("conv[@k=3"), "expected ]");
}

}  // namespace
}  // namespace convjit::rules
