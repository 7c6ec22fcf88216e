// Built-in model tables (DESIGN.md section 8: ResNet-50, YOLO11n, CosmoFlow)
// and their expansion into the operations a training step runs: every conv
// in fwd, bwddata (except on the input layer) and bwdfilt, the bias
// gradient where a conv has a bias, the BatchNorm after a conv (training
// fwd and bwd, the block activation fused), and every pool and upsample fwd
// and bwd.  Elementwise ops and concatenations are not listed, nor a
// BatchNorm that would see one value per channel (batch 1 at a 1x1 stage):
// training cannot normalise that, and PyTorch refuses it too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

struct ModelLayer {
  std::string name;
  bool is_pool = false;
  bool is_upsample = false;  // a nearest upsample by `upsample_scale` (YOLO's neck)
  int level = 0;  // the input's size is the image size halved (rounding up) `level` times
  std::int64_t in_channels = 0;
  std::int64_t out_channels = 0;  // pools: equal to in_channels
  std::int64_t kernel = 1;        // square (cubic in 3D); pools: the window
  std::int64_t stride = 1;
  std::int64_t pad = 0;
  std::int64_t groups = 1;  // 0: depthwise (groups = in_channels)
  PoolingMode pool_mode = PoolingMode::none;
  bool global_pool = false;  // window = the whole input
  bool bias = false;
  bool input_layer = false;  // sees the model input, which needs no gradient
  bool activation = true;    // a conv: its block ends in the model's block activation
  bool batchnorm = false;    // a conv: a BatchNorm follows (fused with the block activation)
  std::int64_t upsample_scale = 2;
  int count = 1;  // occurrences in the model

  [[nodiscard]] bool is_conv() const { return !is_pool && !is_upsample; }
};

struct ModelTable {
  std::string name;
  std::string description;
  int spatial_dims = 2;
  std::int64_t default_image_size = 0;
  std::vector<ModelLayer> layers;
  // Conv+BN+act blocks' activation, for the fused forward (ModelOptions::
  // fused); identity where the model's is none of convjit's epilogues.
  Activation block_activation = Activation::identity;
  double batchnorm_epsilon = kDefaultNormEpsilon;  // YOLO's is 1e-3
};

struct ModelOptions {
  std::int64_t batch = 1;
  std::int64_t image_size = 0;  // 0: the model's default
  bool channels_last = false;
  DataType dtype = DataType::f32;
  // Forward convs as Conv+BN+act blocks with the batch norm folded into w
  // and a bias: act(conv + bias) fused, or conv + bias where the layer has
  // a bias of its own or no activation; no BatchNorm ops then.  Only
  // models with a block activation have this form.
  bool fused = false;
  // w K R S C (channels contiguous), as PyTorch's channels-last modules
  // hold it; else K C R S, LBANN's (and PyTorch's default).
  bool krsc_filters = false;
};

// One operation of a training step.
struct ModelOp {
  std::string layer;
  OpDescriptor desc;
  int count = 1;  // occurrences per step
};

[[nodiscard]] const std::vector<ModelTable>& builtin_models();
[[nodiscard]] const ModelTable* find_model(const std::string& name);

// Every operation, in layer order; errors name the layer and the option.
[[nodiscard]] Result<std::vector<ModelOp>> expand_model(const ModelTable& model,
                                                        const ModelOptions& options);

// The table's own model definitions (dispatcher/models/*.cpp).
ModelTable resnet50_table();
ModelTable yolo11n_table();
ModelTable cosmoflow_table();

}  // namespace convjit
