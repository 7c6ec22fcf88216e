// YOLO11n (Ultralytics), 640x640 by default.  Every conv is conv+BN+SiLU
// with padding k/2 and no bias, except the detect head's last 1x1 convs
// (a bias, no BN, no activation) and C2PSA's attention and FFN output
// convs (conv+BN, act=False).
// Levels: 0 = 640, 1 = 320, 2 = 160, 3 = 80, 4 = 40, 5 = 20.  Every conv
// but the detect head's last is followed by its BatchNorm; the neck's two
// 2x nearest upsamples appear, concatenations do not.
#include "dispatcher/models/model_builders.hpp"

namespace convjit {

namespace {

using namespace models;

// C3k2 with plain bottlenecks (c3k=False): cv1, one bottleneck of two 3x3
// convs (c -> c/2 -> c), cv2 over the concatenation.  The hidden width c is
// out * e with e = 0.25 in backbone layers 2 and 4, else 0.5.
void c3k2(std::vector<ModelLayer>& layers, const std::string& name, int level, std::int64_t in,
          std::int64_t out, std::int64_t c) {
  layers.push_back(conv(name + ".cv1", level, in, 2 * c, 1));
  layers.push_back(conv(name + ".m.cv1", level, c, c / 2, 3));
  layers.push_back(conv(name + ".m.cv2", level, c / 2, c, 3));
  layers.push_back(conv(name + ".cv2", level, 3 * c, out, 1));
}

// C3k2 with a C3k block (c3k=True): the C3k holds two bottlenecks of two
// full-width 3x3 convs each.
void c3k2_c3k(std::vector<ModelLayer>& layers, const std::string& name, int level, std::int64_t in,
              std::int64_t out) {
  const std::int64_t c = out / 2;
  layers.push_back(conv(name + ".cv1", level, in, 2 * c, 1));
  layers.push_back(conv(name + ".m.cv1+cv2", level, c, c / 2, 1, 1, 2));
  layers.push_back(conv(name + ".m.bottlenecks", level, c / 2, c / 2, 3, 1, 4));
  layers.push_back(conv(name + ".m.cv3", level, c, c, 1));
  layers.push_back(conv(name + ".cv2", level, 3 * c, out, 1));
}

void detect_branch(std::vector<ModelLayer>& layers, int level, std::int64_t in) {
  const std::string p = "detect@" + std::to_string(in);
  layers.push_back(conv(p + ".box.0", level, in, 64, 3));
  layers.push_back(conv(p + ".box.1", level, 64, 64, 3));
  layers.push_back(with_bias(conv(p + ".box.2", level, 64, 64, 1)));
  layers.push_back(depthwise(p + ".cls.0.dw", level, in, 3));
  layers.push_back(conv(p + ".cls.0.pw", level, in, 80, 1));
  layers.push_back(depthwise(p + ".cls.1.dw", level, 80, 3));
  layers.push_back(conv(p + ".cls.1.pw", level, 80, 80, 1));
  layers.push_back(with_bias(conv(p + ".cls.2", level, 80, 80, 1)));
}

}  // namespace

ModelTable yolo11n_table() {
  std::vector<ModelLayer> l;
  l.push_back(input_layer(conv("b0.conv", 0, 3, 16, 3, 2)));
  l.push_back(conv("b1.conv", 1, 16, 32, 3, 2));
  c3k2(l, "b2.c3k2", 2, 32, 64, 16);
  l.push_back(conv("b3.conv", 2, 64, 64, 3, 2));
  c3k2(l, "b4.c3k2", 3, 64, 128, 32);
  l.push_back(conv("b5.conv", 3, 128, 128, 3, 2));
  c3k2_c3k(l, "b6.c3k2", 4, 128, 128);
  l.push_back(conv("b7.conv", 4, 128, 256, 3, 2));
  c3k2_c3k(l, "b8.c3k2", 5, 256, 256);
  // SPPF
  l.push_back(conv("b9.sppf.cv1", 5, 256, 128, 1));
  l.push_back(max_pool("b9.sppf.m", 5, 128, 5, 1, 2, 3));
  l.push_back(conv("b9.sppf.cv2", 5, 512, 256, 1));
  // C2PSA
  l.push_back(conv("b10.c2psa.cv1", 5, 256, 256, 1));
  l.push_back(without_activation(conv("b10.c2psa.attn.qkv", 5, 128, 256, 1)));
  l.push_back(without_activation(depthwise("b10.c2psa.attn.pe", 5, 128, 3)));
  l.push_back(without_activation(conv("b10.c2psa.attn.proj", 5, 128, 128, 1)));
  l.push_back(conv("b10.c2psa.ffn.0", 5, 128, 256, 1));
  l.push_back(without_activation(conv("b10.c2psa.ffn.1", 5, 256, 128, 1)));
  l.push_back(conv("b10.c2psa.cv2", 5, 256, 256, 1));
  // Neck
  l.push_back(upsample("n11.upsample", 5, 256));
  c3k2(l, "n13.c3k2", 4, 384, 128, 64);
  l.push_back(upsample("n14.upsample", 4, 128));
  c3k2(l, "n16.c3k2", 3, 256, 64, 32);
  l.push_back(conv("n17.conv", 3, 64, 64, 3, 2));
  c3k2(l, "n19.c3k2", 4, 192, 128, 64);
  l.push_back(conv("n20.conv", 4, 128, 128, 3, 2));
  c3k2_c3k(l, "n22.c3k2", 5, 384, 256);
  // Detect head
  detect_branch(l, 3, 64);
  detect_branch(l, 4, 128);
  detect_branch(l, 5, 256);
  return {"yolo11n", "YOLO11n object detector (Ultralytics; NCHW 640x640 default)", 2, 640,
          with_batchnorms(std::move(l)), Activation::silu, 1e-3};
}

}  // namespace convjit
