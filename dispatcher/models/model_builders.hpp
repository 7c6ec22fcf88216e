// Compact constructors for the built-in model tables.
#pragma once

#include "dispatcher/models/model_table.hpp"

namespace convjit::models {

// A k x k conv with padding k/2 unless given.
inline ModelLayer conv(std::string name, int level, std::int64_t in, std::int64_t out,
                       std::int64_t kernel, std::int64_t stride = 1, int count = 1) {
  ModelLayer l;
  l.name = std::move(name);
  l.level = level;
  l.in_channels = in, l.out_channels = out;
  l.kernel = kernel, l.stride = stride, l.pad = kernel / 2;
  l.count = count;
  return l;
}

inline ModelLayer depthwise(std::string name, int level, std::int64_t channels, std::int64_t kernel,
                            int count = 1) {
  ModelLayer l = conv(std::move(name), level, channels, channels, kernel, 1, count);
  l.groups = 0;
  return l;
}

inline ModelLayer with_bias(ModelLayer l) {
  l.bias = true;
  return l;
}

inline ModelLayer without_activation(ModelLayer l) {
  l.activation = false;
  return l;
}

inline ModelLayer input_layer(ModelLayer l) {
  l.input_layer = true;
  return l;
}

inline ModelLayer max_pool(std::string name, int level, std::int64_t channels, std::int64_t window,
                           std::int64_t stride, std::int64_t pad, int count = 1) {
  ModelLayer l;
  l.name = std::move(name);
  l.is_pool = true;
  l.level = level;
  l.in_channels = l.out_channels = channels;
  l.kernel = window, l.stride = stride, l.pad = pad;
  l.pool_mode = PoolingMode::max;
  l.count = count;
  return l;
}

// A nearest upsample by `scale` of an input at `level`.
inline ModelLayer upsample(std::string name, int level, std::int64_t channels,
                           std::int64_t scale = 2) {
  ModelLayer l;
  l.name = std::move(name);
  l.is_upsample = true;
  l.level = level;
  l.in_channels = l.out_channels = channels;
  l.upsample_scale = scale;
  return l;
}

// A BatchNorm after every conv without a bias of its own (Conv-BN-act).
inline std::vector<ModelLayer> with_batchnorms(std::vector<ModelLayer> layers) {
  for (ModelLayer& l : layers) l.batchnorm = l.is_conv() && !l.bias;
  return layers;
}

inline ModelLayer global_avg_pool(std::string name, int level, std::int64_t channels) {
  ModelLayer l = max_pool(std::move(name), level, channels, 1, 1, 0);
  l.pool_mode = PoolingMode::avg_exclude_pad;
  l.global_pool = true;
  return l;
}

}  // namespace convjit::models
