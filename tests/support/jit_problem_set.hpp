// Test helper: the descriptor set the JIT kernel templates are verified on,
// on a GPU (test_gpu_backends.cpp) and in the host emulator
// (test_emulated_kernels.cpp): random convolutions in every direction,
// pools in every mode and direction, bias gradients, over 1D/2D/3D,
// strides, asymmetric padding, dilation, groups (depthwise included) and
// NCHW, NHWC and halo layouts; and every layer of the reference models.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "dispatcher/descriptor/descriptor_builder.hpp"
#include "dispatcher/models/model_table.hpp"
#include "support/problems.hpp"

namespace convjit::test {

inline void set_dtype(convjit_tensor_desc_t& t, DataType dtype) {
  t.dtype = static_cast<convjit_dtype_t>(dtype);
}

// The case's descriptors in `dtype`, one per direction asked for.
inline std::vector<OpDescriptor> conv_descriptors(
    const ConvCase& c, DataType dtype,
    std::initializer_list<Direction> directions = {Direction::fwd, Direction::bwddata,
                                                   Direction::bwdfilt}) {
  std::vector<OpDescriptor> out;
  auto t = make_conv_tensors<float>(c);
  auto x = t.x.desc(), w = t.w.desc(), y = t.y.desc();
  set_dtype(x, dtype), set_dtype(w, dtype), set_dtype(y, dtype);
  for (Direction dir : directions) {
    auto d = make_conv_descriptor(&t.params, dir, &x, &w, &y);
    EXPECT_TRUE(d.is_ok()) << d.status().message() << " for " << c.describe();
    if (d.is_ok()) out.push_back(d.value());
  }
  return out;
}

// `cases` random convolutions, each in fwd, bwddata and bwdfilt.
// `symmetric`: only what cuDNN expresses (see random_conv_case).
inline std::vector<OpDescriptor> random_conv_descriptors(std::mt19937& rng, DataType dtype,
                                                         int cases, bool symmetric = false) {
  std::vector<OpDescriptor> out;
  for (int i = 0; i < cases; ++i)
    for (OpDescriptor& d : conv_descriptors(random_conv_case(rng, 1 + i % 3, symmetric), dtype))
      out.push_back(d);
  return out;
}

// The case's descriptors in `dtype`, forward and backward.
inline std::vector<OpDescriptor> pool_descriptors(const PoolCase& c, DataType dtype) {
  std::vector<OpDescriptor> out;
  auto t = make_pool_tensors<float>(c);
  auto x = t.x.desc(), y = t.y.desc();
  set_dtype(x, dtype), set_dtype(y, dtype);
  for (Direction dir : {Direction::fwd, Direction::bwd}) {
    auto d = make_pool_descriptor(&t.params, dir, &x, &y);
    EXPECT_TRUE(d.is_ok()) << d.status().message();
    if (d.is_ok()) out.push_back(d.value());
  }
  return out;
}

// `cases` random pools per mode, each forward and backward.
inline std::vector<OpDescriptor> random_pool_descriptors(std::mt19937& rng, DataType dtype,
                                                         int cases, bool symmetric = false) {
  std::vector<OpDescriptor> out;
  for (auto mode : {CONVJIT_POOL_MAX, CONVJIT_POOL_AVG_EXCLUDE_PAD, CONVJIT_POOL_AVG_INCLUDE_PAD})
    for (int i = 0; i < cases; ++i)
      for (OpDescriptor& d : pool_descriptors(random_pool_case(rng, 1 + i % 3, mode, symmetric),
                                              dtype))
        out.push_back(d);
  return out;
}

// Bias gradients over random conv outputs (their dy).
inline std::vector<OpDescriptor> random_bias_descriptors(std::mt19937& rng, DataType dtype,
                                                         int cases) {
  std::vector<OpDescriptor> out;
  for (int i = 0; i < cases; ++i) {
    auto t = make_conv_tensors<float>(random_conv_case(rng, 1 + i % 3));
    auto dy = t.y.desc();
    set_dtype(dy, dtype);
    auto d = make_bias_grad_descriptor(&dy);
    EXPECT_TRUE(d.is_ok()) << d.status().message();
    if (d.is_ok()) out.push_back(d.value());
  }
  return out;
}

// The operations of a reference model's training step: its convolutions,
// pools and bias gradients; with `every_op`, its BatchNorms and upsamples
// too (which only the reference serves so far).
inline std::vector<OpDescriptor> model_descriptors(const std::string& model,
                                                   const ModelOptions& options,
                                                   bool every_op = false) {
  std::vector<OpDescriptor> out;
  auto ops = expand_model(*find_model(model), options);
  EXPECT_TRUE(ops.is_ok()) << ops.status().message();
  if (ops.is_ok())
    for (const ModelOp& op : ops.value())
      if (every_op || !(op.desc.is_batchnorm() || op.desc.is_resize())) out.push_back(op.desc);
  return out;
}

}  // namespace convjit::test
