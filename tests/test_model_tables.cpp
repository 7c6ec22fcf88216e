// The built-in model tables against DESIGN.md section 8.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/models/model_table.hpp"

namespace convjit {
namespace {

int conv_count(const ModelTable& m) {
  int n = 0;
  for (const auto& l : m.layers) n += l.is_conv() ? l.count : 0;
  return n;
}

std::vector<ModelOp> expand(const std::string& name, ModelOptions o = {}) {
  auto ops = expand_model(*find_model(name), o);
  EXPECT_TRUE(ops.is_ok()) << ops.status().message();
  return ops.value();
}

TEST(ModelTables, BuiltinsAreListed) {
  std::set<std::string> names;
  for (const auto& m : builtin_models()) names.insert(m.name);
  EXPECT_EQ(names, (std::set<std::string>{"resnet50", "yolo11n", "cosmoflow"}));
  EXPECT_EQ(find_model("vgg16"), nullptr);
}

TEST(ModelTables, ResNet50HasFiftyThreeConvsAndTheDesignStemName) {
  EXPECT_EQ(conv_count(*find_model("resnet50")), 53);
  const auto ops = expand("resnet50", {32});
  EXPECT_EQ(descriptor_name(ops.at(0).desc),
            "conv2d_32_3_224_224_0_150528_50176_224_1_0_64_3_7_7_0_32_64_112_112_0_802816_12544_112_"
            "1_0_3_3_0_2_2_0_1_1_0_1_fwd");
  // The stem sees the image: no bwddata.
  EXPECT_EQ(ops.at(1).desc.direction, Direction::bwdfilt);
  // Max pool 3x3 s2 p1 on 64x112x112 (after the stem's BatchNorm), global
  // average 7x7 on 2048.
  const ModelOp& pool = ops.at(4);
  EXPECT_TRUE(pool.desc.is_pool());
  EXPECT_EQ(pool.desc.x_dims, (Dims5{32, 64, 112, 112, 0}));
  EXPECT_EQ(pool.desc.y_dims, (Dims5{32, 64, 56, 56, 0}));
  const ModelOp& gap = ops.at(ops.size() - 2);
  EXPECT_EQ(gap.desc.pool_mode, PoolingMode::avg_exclude_pad);
  EXPECT_EQ(gap.desc.window, (Dims3{7, 7, 0}));
  EXPECT_EQ(gap.desc.y_dims, (Dims5{32, 2048, 1, 1, 0}));
}

TEST(ModelTables, EveryConvShapeChainsFromTheImageSize) {
  for (const auto& model : builtin_models()) {
    for (const auto& op : expand(model.name, {2})) {
      if (!op.desc.is_conv() || op.desc.direction != Direction::fwd) continue;
      // Each output is either the same size or halved (rounding up).
      const std::int64_t in = op.desc.x_dims[2], out = op.desc.y_dims[2];
      EXPECT_TRUE(out == in || out == (in + 1) / 2) << model.name << " " << op.layer;
    }
  }
}

TEST(ModelTables, Yolo11nMatchesTheDesignLayerList) {
  const auto ops = expand("yolo11n", {1});
  std::multiset<std::string> convs;  // "C->K kxk @size"
  for (const auto& op : ops)
    if (op.desc.is_conv() && op.desc.direction == Direction::fwd)
      for (int i = 0; i < op.count; ++i)
        convs.insert(std::to_string(op.desc.x_dims[1]) + "->" + std::to_string(op.desc.w_dims[0]) + " " +
                     std::to_string(op.desc.w_dims[2]) + "x" + std::to_string(op.desc.w_dims[3]) + " @" +
                     std::to_string(op.desc.x_dims[2]) + (op.desc.groups > 1 ? " dw" : ""));
  for (const char* expected : {"3->16 3x3 @640", "16->32 3x3 @320", "32->32 1x1 @160", "16->8 3x3 @160",
                               "48->64 1x1 @160", "96->128 1x1 @80", "128->256 3x3 @40",
                               "512->256 1x1 @20", "128->128 3x3 @20 dw", "80->80 3x3 @40 dw",
                               "64->80 1x1 @80"})
    EXPECT_EQ(convs.count(expected), 1u) << expected;
  // C3k blocks of layers 8 and 22 (4 each), plus the @20 detect box branch.
  EXPECT_EQ(convs.count("64->64 3x3 @20"), 9u);
  EXPECT_EQ(convs.count("32->32 3x3 @40"), 4u);
  int pools = 0;
  for (const auto& op : ops)
    if (op.desc.is_pool() && op.desc.direction == Direction::fwd) {
      EXPECT_EQ(op.desc.window, (Dims3{5, 5, 0}));
      EXPECT_EQ(op.desc.x_dims, (Dims5{1, 128, 20, 20, 0}));
      pools += op.count;
    }
  EXPECT_EQ(pools, 3);
  int bias = 0;
  for (const auto& op : ops) bias += op.desc.kind == OpKind::bias_grad;
  EXPECT_EQ(bias, 6);  // box and class outputs of three detect branches
}

// (fwd BatchNorms, their activations) per model, weighted by count.
std::pair<int, std::multiset<Activation>> batchnorms(const std::vector<ModelOp>& ops) {
  int bwd = 0;
  std::multiset<Activation> fwd;
  for (const auto& op : ops) {
    if (!op.desc.is_batchnorm()) continue;
    for (int i = 0; i < op.count; ++i)
      op.desc.direction == Direction::fwd ? (void)fwd.insert(op.desc.activation) : (void)++bwd;
  }
  EXPECT_EQ(bwd, static_cast<int>(fwd.size()));
  return {bwd, fwd};
}

TEST(ModelTables, EveryConvWithoutBiasIsFollowedByItsBatchNorm) {
  const auto resnet = expand("resnet50", {2});
  EXPECT_EQ(batchnorms(resnet).first, 53);
  const auto yolo = expand("yolo11n", {2, 320});
  const auto [count, activations] = batchnorms(yolo);
  EXPECT_EQ(count, conv_count(*find_model("yolo11n")) - 6);  // the detect head's last convs
  // C2PSA's qkv, pe, proj and ffn.1 are conv+BN without the activation.
  EXPECT_EQ(activations.count(Activation::identity), 4u);
  for (std::size_t i = 0; i + 1 < yolo.size(); ++i) {
    if (!yolo[i].desc.is_batchnorm() || yolo[i].desc.direction != Direction::fwd) continue;
    // The BatchNorm normalises its conv's output, in training, with every gradient after.
    const ModelOp& conv = *std::find_if(yolo.begin(), yolo.end(), [&](const ModelOp& op) {
      return op.desc.is_conv() && op.layer + ".bn" == yolo[i].layer;
    });
    EXPECT_EQ(yolo[i].desc.x_dims, conv.desc.y_dims) << yolo[i].layer;
    EXPECT_FALSE(yolo[i].desc.has_norm_flag(kNormInference));
    EXPECT_EQ(yolo[i + 1].desc.norm_flags & kNormGradMask, kNormGradMask);
  }
  // At batch 1, layer4's 1x1 outputs (image size 32) have one value per
  // channel: those BatchNorms cannot train and are left out.
  EXPECT_EQ(batchnorms(expand("resnet50", {1, 32})).first, 53 - 9);
  EXPECT_EQ(batchnorms(expand("resnet50", {2, 32})).first, 53);
}

TEST(ModelTables, Yolo11nNeckUpsamplesTwiceByTwo) {
  std::vector<std::pair<Dims5, Dims5>> upsamples;
  for (const auto& op : expand("yolo11n", {2}))
    if (op.desc.is_resize()) {
      EXPECT_EQ(op.desc.resize_mode, ResizeMode::nearest_floor);
      if (op.desc.direction == Direction::fwd) upsamples.push_back({op.desc.x_dims, op.desc.y_dims});
    }
  EXPECT_EQ(upsamples, (std::vector<std::pair<Dims5, Dims5>>{
                           {{2, 256, 20, 20, 0}, {2, 256, 40, 40, 0}},
                           {{2, 128, 40, 40, 0}, {2, 128, 80, 80, 0}}}));
}

TEST(ModelTables, TheFusedFormFoldsTheBatchNorms) {
  ModelOptions fused{1};
  fused.fused = true;
  EXPECT_EQ(batchnorms(expand("yolo11n", fused)).first, 0);
}

TEST(ModelTables, CosmoFlowIs3DAndHalvesPerStage) {
  const auto ops = expand("cosmoflow", {1});
  EXPECT_EQ(ops.at(0).desc.spatial_dims, 3);
  EXPECT_EQ(ops.at(0).desc.x_dims, (Dims5{1, 4, 128, 128, 128}));
  std::vector<std::int64_t> conv_sizes;
  for (const auto& op : ops)
    if (op.desc.is_conv() && op.desc.direction == Direction::fwd) conv_sizes.push_back(op.desc.x_dims[2]);
  EXPECT_EQ(conv_sizes, (std::vector<std::int64_t>{128, 64, 32, 16, 8}));
}

TEST(ModelTables, OptionsChangeLayoutDtypeAndSize) {
  const auto ops = expand("resnet50", {4, 96, true, DataType::bf16});
  EXPECT_EQ(ops.at(0).desc.x_dims, (Dims5{4, 3, 96, 96, 0}));
  EXPECT_EQ(ops.at(0).desc.x_strides[1], 1);  // channels last
  EXPECT_EQ(ops.at(0).desc.dtype, DataType::bf16);
  auto too_small = expand_model(*find_model("resnet50"), {1, 1});
  EXPECT_TRUE(too_small.is_ok()) << too_small.status().message();
  auto bad_batch = expand_model(*find_model("yolo11n"), {0});
  ASSERT_FALSE(bad_batch.is_ok());
  EXPECT_NE(bad_batch.status().message().find("batch 0 must be at least 1"), std::string::npos);
}

}  // namespace
}  // namespace convjit
