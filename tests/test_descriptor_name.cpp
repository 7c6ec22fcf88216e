// Descriptor names: LBANN's known-good names byte for byte, the symbolic
// batch, the documented extension, format/parse round trips and precise
// errors for malformed names.
#include <gtest/gtest.h>

#include <random>

#include "dispatcher/descriptor/descriptor_builder.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/descriptor_validation.hpp"
#include "support/problems.hpp"

namespace convjit::test {
namespace {

constexpr const char* kCosmoFlowName =
    "conv3d_2_4_66_512_512_69206016_17301504_262144_512_1_32_4_3_3_3_2_32_64_512_512_553648128_"
    "17301504_262144_512_1_0_1_1_1_1_1_1_1_1_1_fwd";
constexpr const char* kResNetStemName =
    "conv2d_32_3_224_224_0_150528_50176_224_1_0_64_3_7_7_0_32_64_112_112_0_802816_12544_112_1_0_"
    "3_3_0_2_2_0_1_1_0_1_fwd";

TEST(DescriptorName, CosmoFlowHaloNameMatchesLbannByteForByte) {
  const auto x = TensorDesc::strided(CONVJIT_DTYPE_F32, {2, 4, 66, 512, 512},
                                     {69206016, 17301504, 262144, 512, 1});
  const auto y = TensorDesc::strided(CONVJIT_DTYPE_F32, {2, 32, 64, 512, 512},
                                     {553648128, 17301504, 262144, 512, 1});
  TensorDesc w;
  ASSERT_TRUE(TensorDesc::contiguous(w, CONVJIT_DTYPE_F32, {32, 4, 3, 3, 3}).is_ok());
  ConvParams p(3);
  p.pad_begin[1] = p.pad_begin[2] = p.pad_end[1] = p.pad_end[2] = 1;
  std::string name;
  ASSERT_TRUE(conv_descriptor_name(p, CONVJIT_CONV_FWD, x, w, y, false, name).is_ok());
  EXPECT_EQ(name, kCosmoFlowName);
}

TEST(DescriptorName, ResNetStemNameMatchesLbannByteForByte) {
  TensorDesc x, w, y;
  ASSERT_TRUE(TensorDesc::contiguous(x, CONVJIT_DTYPE_F32, {32, 3, 224, 224}).is_ok());
  ASSERT_TRUE(TensorDesc::contiguous(w, CONVJIT_DTYPE_F32, {64, 3, 7, 7}).is_ok());
  ASSERT_TRUE(TensorDesc::contiguous(y, CONVJIT_DTYPE_F32, {32, 64, 112, 112}).is_ok());
  ConvParams p(2);
  p.stride[0] = p.stride[1] = 2;
  p.pad_begin[0] = p.pad_begin[1] = p.pad_end[0] = p.pad_end[1] = 3;
  std::string name;
  ASSERT_TRUE(conv_descriptor_name(p, CONVJIT_CONV_FWD, x, w, y, false, name).is_ok());
  EXPECT_EQ(name, kResNetStemName);
}

TEST(DescriptorName, SymbolicBatchReplacesOnlyTheBatchEntries) {
  auto parsed = parse_descriptor_name(kResNetStemName);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  EXPECT_EQ(descriptor_name(with_symbolic_batch(parsed.value())),
            "conv2d_B_3_224_224_0_150528_50176_224_1_0_64_3_7_7_0_B_64_112_112_0_802816_12544_112_"
            "1_0_3_3_0_2_2_0_1_1_0_1_fwd");
}

TEST(DescriptorName, KnownNamesParseAndFormatBack) {
  for (const char* name : {kCosmoFlowName, kResNetStemName}) {
    auto parsed = parse_descriptor_name(name);
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
    EXPECT_EQ(descriptor_name(parsed.value()), name);
    auto symbolic = with_symbolic_batch(parsed.value());
    auto reparsed = parse_descriptor_name(descriptor_name(symbolic));
    ASSERT_TRUE(reparsed.is_ok()) << reparsed.status().message();
    EXPECT_EQ(reparsed.value(), symbolic);
  }
}

TEST(DescriptorName, LibraryFileNamesAreAccepted) {
  auto parsed = parse_descriptor_name(std::string("lib") + kResNetStemName + ".so");
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  EXPECT_EQ(descriptor_name(parsed.value()), kResNetStemName);
}

// DESIGN.md says 38 tokens, but its own examples (and the grammar: 1 + 5*5 +
// 3*3 + 1 + 1) have 37.
TEST(DescriptorName, LbannGrammarHasThirtySevenTokens) {
  std::size_t underscores = 0;
  for (char c : std::string(kResNetStemName)) underscores += c == '_';
  EXPECT_EQ(underscores + 1, 37u);
}

// ---- extension ---------------------------------------------------------------

OpDescriptor conv_from_case(const ConvCase& c, Direction direction, convjit_dtype_t dtype) {
  auto t = make_conv_tensors<float>(c);
  auto x = t.x.desc(), w = t.w.desc(), y = t.y.desc();
  x.dtype = w.dtype = y.dtype = dtype;
  auto d = make_conv_descriptor(&t.params, direction, &x, &w, &y);
  EXPECT_TRUE(d.is_ok()) << d.status().message() << " " << c.describe();
  return d.value();
}

TEST(DescriptorNameExtension, DtypeAndAsymmetricPaddingAreSuffixes) {
  const ConvCase c{1, 2, 2, 1, {8, 8}, {3, 3}, {1, 1}, {1, 2}, {0, 1}, {1, 1}};
  const std::string name = descriptor_name(conv_from_case(c, Direction::fwd, CONVJIT_DTYPE_BF16));
  EXPECT_TRUE(name.ends_with("_1_2_0_1_1_0_1_1_0_1_fwd_pe_0_1_0_bf16")) << name;
}

TEST(DescriptorNameExtension, NonContiguousWeightsCarryTheirStrides) {
  OpDescriptor d = conv_from_case({1, 2, 4, 1, {5, 5}, {3, 3}}, Direction::fwd, CONVJIT_DTYPE_F32);
  d.w_strides = {1, 36, 12, 4, 0};  // K innermost: a KRSC-like layout
  const std::string name = descriptor_name(d);
  EXPECT_TRUE(name.ends_with("_fwd_ws_1_36_12_4_0")) << name;
  auto parsed = parse_descriptor_name(name);
  ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
  EXPECT_EQ(parsed.value(), d);
}

TEST(DescriptorNameExtension, PoolingAndBiasNames) {
  PoolCase c{1, 64, {112, 112}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, CONVJIT_POOL_MAX};
  auto t = make_pool_tensors<float>(c);
  std::string name;
  ASSERT_TRUE(pool_descriptor_name(t.params, CONVJIT_POOL_FWD, t.x.desc(), t.y.desc(), false, name)
                  .is_ok());
  EXPECT_EQ(name,
            "maxpool2d_1_64_112_112_0_802816_12544_112_1_0_3_3_0_1_64_56_56_0_200704_3136_"
            "56_1_0_1_1_0_2_2_0_1_1_0_fwd");
  TensorDesc dy;
  ASSERT_TRUE(TensorDesc::contiguous(dy, CONVJIT_DTYPE_F16, {8, 16, 10}).is_ok());
  ASSERT_TRUE(bias_grad_descriptor_name(dy, true, name).is_ok());
  EXPECT_EQ(name, "biasgrad1d_B_16_10_0_0_160_10_1_0_0_f16");
}

TEST(DescriptorNameExtension, FusedEpiloguesFollowTheWeightStridesAndPrecedeTheDtype) {
  OpDescriptor d = conv_from_case({1, 2, 4, 1, {5, 5}, {3, 3}}, Direction::fwd, CONVJIT_DTYPE_F32);
  const std::string plain = descriptor_name(d);
  const std::pair<Activation, std::int32_t> cases[] = {
      {Activation::silu, kEpilogueBias},
      {Activation::relu, kEpilogueBias | kEpilogueResidual},
      {Activation::identity, kEpilogueResidual},
      {Activation::sigmoid, 0}};
  const char* suffixes[] = {"_ep_silu_bias_bf16", "_ep_relu_bias_res_bf16", "_ep_identity_res_bf16",
                            "_ep_sigmoid_bf16"};
  d.dtype = DataType::bf16;
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    d.activation = cases[i].first;
    d.epilogue_operands = cases[i].second;
    const std::string name = descriptor_name(d);
    EXPECT_EQ(name, plain + suffixes[i]);
    auto parsed = parse_descriptor_name(name);
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
    EXPECT_EQ(parsed.value(), d) << name;
  }
}

TEST(DescriptorNameExtension, EpiloguesBelongToConvFwdOnly) {
  OpDescriptor d =
      conv_from_case({1, 2, 4, 1, {5, 5}, {3, 3}}, Direction::bwddata, CONVJIT_DTYPE_F32);
  auto parsed = parse_descriptor_name(descriptor_name(d) + "_ep_relu");
  ASSERT_FALSE(parsed.is_ok());
  EXPECT_NE(parsed.status().message().find("expected pe, ws, f16"), std::string::npos)
      << parsed.status().message();
  d.activation = Activation::relu;
  const Status s = validate_descriptor(d);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("applies to conv fwd only, not to bwddata conv"), std::string::npos)
      << s.message();
}

// ---- round trips ---------------------------------------------------------------

TEST(DescriptorNameRoundTrip, EveryOpFormatsAndParsesBack) {
  std::mt19937 rng(77);
  const convjit_dtype_t dtypes[] = {CONVJIT_DTYPE_F32, CONVJIT_DTYPE_F16, CONVJIT_DTYPE_BF16,
                                    CONVJIT_DTYPE_F64};
  int checked = 0;
  for (int trial = 0; trial < 300; ++trial) {
    const int spatial = 1 + trial % 3;
    const convjit_dtype_t dtype = dtypes[trial % 4];
    std::vector<OpDescriptor> descs;
    const ConvCase conv = random_conv_case(rng, spatial);
    for (Direction dir : {Direction::fwd, Direction::bwddata, Direction::bwdfilt})
      descs.push_back(conv_from_case(conv, dir, dtype));
    for (auto mode :
         {CONVJIT_POOL_MAX, CONVJIT_POOL_AVG_EXCLUDE_PAD, CONVJIT_POOL_AVG_INCLUDE_PAD}) {
      const PoolCase pool = random_pool_case(rng, spatial, mode);
      auto t = make_pool_tensors<float>(pool);
      auto x = t.x.desc(), y = t.y.desc();
      x.dtype = y.dtype = dtype;
      for (Direction dir : {Direction::fwd, Direction::bwd}) {
        auto d = make_pool_descriptor(&t.params, dir, &x, &y);
        ASSERT_TRUE(d.is_ok()) << d.status().message();
        descs.push_back(d.value());
      }
    }
    auto dy = make_conv_tensors<float>(conv).y.desc();
    dy.dtype = dtype;
    descs.push_back(make_bias_grad_descriptor(&dy).value());
    for (const OpDescriptor& d : descs)
      for (const OpDescriptor& variant : {d, with_symbolic_batch(d)}) {
        const std::string name = descriptor_name(variant);
        auto parsed = parse_descriptor_name(name);
        ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
        EXPECT_EQ(parsed.value(), variant) << name;
        EXPECT_EQ(descriptor_name(parsed.value()), name);
        EXPECT_EQ(hash_descriptor(parsed.value()), hash_descriptor(variant));
        ++checked;
      }
  }
  EXPECT_EQ(checked, 300 * 10 * 2);
}

TEST(DescriptorNameRoundTrip, DistinctOpsHaveDistinctNamesAndHashes) {
  const OpDescriptor a = conv_from_case({1, 2, 2, 1, {6, 6}, {3, 3}, {1, 1}, {1, 1}},
                                        Direction::fwd, CONVJIT_DTYPE_F32);
  OpDescriptor b = a;
  b.dtype = DataType::f16;
  OpDescriptor c = a;
  c.pad_end[0] = 0;
  OpDescriptor d = a;
  d.direction = Direction::bwddata;
  for (const OpDescriptor* other : {&b, &c, &d}) {
    EXPECT_NE(descriptor_name(a), descriptor_name(*other));
    EXPECT_NE(hash_descriptor(a), hash_descriptor(*other));
    EXPECT_FALSE(a == *other);
  }
}

// ---- malformed names ---------------------------------------------------------

struct Malformed {
  std::string name;
  std::string expected_fragment;
};

std::string replace_token(std::string name, std::size_t index, const std::string& token) {
  std::size_t start = 0;
  for (std::size_t i = 0; i < index; ++i) start = name.find('_', start) + 1;
  const std::size_t end = name.find('_', start);
  return name.replace(start, end == std::string::npos ? std::string::npos : end - start, token);
}

TEST(DescriptorNameErrors, NameTheBadTokenAndItsPosition) {
  const std::string stem = kResNetStemName;
  const std::vector<Malformed> cases = {
      {"", "token 1 '': expected conv<N>d"},
      {"conv4d_1", "token 1 'conv4d'"},
      {"deconv2d_1", "token 1 'deconv2d'"},
      {replace_token(stem, 3, "x"), "token 4 'x': expected x shape[2]"},
      {replace_token(stem, 7, "-1"), "token 8 '-1': expected x strides[1]"},
      {replace_token(stem, 11, "007"),
       "token 12 '007': expected w shape[0] as a non-negative integer without leading zeros"},
      {replace_token(stem, 36, "bwd"), "token 37 'bwd': expected fwd, bwddata or bwdfilt"},
      {replace_token(stem, 1, "B"), "token 17 '32': expected B as the y batch"},
      {replace_token(stem, 16, "B"), "token 17 'B': expected an integer y batch"},
      {stem.substr(0, stem.rfind('_')),
       "the name ends after 36 tokens where the op direction was expected"},
      {stem + "_f32",
       "token 38 'f32': expected pe, ws, ep, f16, bf16, f64 or the end of the name (f32 is "
       "the default)"},
      {stem + "_ep_tanh", "token 39 'tanh': expected an activation: identity, relu, silu"},
      {stem + "_ep_identity", "token 39 'identity': expected bias or res after ep_identity"},
      {stem + "_ep_relu_res_bias", "token 41 'bias': expected f16, bf16"},
      {stem + "_ep", "ends after 38 tokens where an activation was expected"},
      {stem + "_f16_f16", "token 39 'f16': expected the end of the name"},
      {stem + "_pe_3_3_0", "token 41 '0': expected a pad end different from the pads"},
      {stem + "_pe_3_3", "ends after 40 tokens where pad end[2] was expected"},
      {stem + "_ws_147_49_7_1_0", "token 43 '0': expected non-contiguous w strides"},
      {replace_token(stem, 1, "99999999999999999999"), "token 2 '99999999999999999999'"},
      {"biasgrad2d_2_64_8_8_0_4096_64_8_1_0_bwd",
       "token 12 'bwd': expected f16, bf16, f64 or the end"},
  };
  for (const auto& c : cases) {
    auto parsed = parse_descriptor_name(c.name);
    ASSERT_FALSE(parsed.is_ok()) << c.name;
    EXPECT_EQ(parsed.status().code(), CONVJIT_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(parsed.status().message().find(c.expected_fragment), std::string::npos)
        << "name: " << c.name << "\nmessage: " << parsed.status().message();
  }
}

TEST(DescriptorNameErrors, WellFormedButInvalidOpsAreRejectedWithTheReason) {
  // y height 111 instead of 112.
  const std::string bad = replace_token(kResNetStemName, 18, "111");
  auto parsed = parse_descriptor_name(bad);
  ASSERT_FALSE(parsed.is_ok());
  EXPECT_NE(parsed.status().message().find("y shape [32, 64, 111, 112] is inconsistent"),
            std::string::npos)
      << parsed.status().message();
  EXPECT_NE(parsed.status().message().find("should be [32, 64, 112, 112]"), std::string::npos);
  // Unused trailing slots must be 0.
  auto slot = parse_descriptor_name(replace_token(kResNetStemName, 28, "1"));
  ASSERT_FALSE(slot.is_ok());
  EXPECT_NE(slot.status().message().find("pad[2] = 1 must be 0"), std::string::npos)
      << slot.status().message();
}

}  // namespace
}  // namespace convjit::test
