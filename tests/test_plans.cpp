// Plans (convjit_plan_*): a conv descriptor pinned to one backend and
// variant computes what the direct call computes, in every direction, and
// refuses what it cannot be; convjit_plan_run serves every op kind on its
// operands, naming any it needs that is missing.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "convjit/convjit.h"
#include "convjit/convjit.hpp"
#include "dispatcher/backends/onednn/onednn_library.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "support/batchnorm_calls.hpp"
#include "support/host_device.hpp"
#include "support/jit_problem_set.hpp"
#include "support/problems.hpp"
#include "support/reference_comparison.hpp"

namespace convjit::test {
namespace {

std::string name_of(const ConvTensors<float>& t, convjit_conv_direction_t direction,
                    bool symbolic = false) {
  std::string name;
  EXPECT_TRUE(
      conv_descriptor_name(t.params, direction, t.x.desc(), t.w.desc(), t.y.desc(), symbolic, name)
          .is_ok());
  return name;
}

// The direct call's result in the direction's output slot, alpha 0.5 and
// beta 0.25 on `before`.
std::vector<double> direct(ConvTensors<float> t, convjit_conv_direction_t direction) {
  const auto& p = t.params;
  convjit_status_t s = CONVJIT_STATUS_INTERNAL_ERROR;
  if (direction == CONVJIT_CONV_FWD)
    s = convjit_conv_forward(&p, &t.x.desc(), t.x.data(), &t.w.desc(), t.w.data(), &t.y.desc(),
                             t.y.data(), 0.5, 0.25, nullptr);
  if (direction == CONVJIT_CONV_BWDDATA)
    s = convjit_conv_backward_data(&p, &t.y.desc(), t.y.data(), &t.w.desc(), t.w.data(),
                                   &t.x.desc(), t.x.data(), 0.5, 0.25, nullptr);
  if (direction == CONVJIT_CONV_BWDFILT)
    s = convjit_conv_backward_filter(&p, &t.x.desc(), t.x.data(), &t.y.desc(), t.y.data(),
                                     &t.w.desc(), t.w.data(), 0.5, 0.25, nullptr);
  EXPECT_EQ(s, CONVJIT_STATUS_SUCCESS) << convjit_last_error_message();
  return direction == CONVJIT_CONV_FWD       ? t.y.values()
         : direction == CONVJIT_CONV_BWDDATA ? t.x.values()
                                             : t.w.values();
}

std::vector<double> planned(ConvTensors<float> t, convjit_conv_direction_t direction,
                            convjit_plan_t* plan, std::int64_t batch) {
  EXPECT_EQ(
      convjit_plan_execute(plan, batch, t.x.data(), t.w.data(), t.y.data(), 0.5, 0.25, nullptr),
      CONVJIT_STATUS_SUCCESS)
      << convjit_last_error_message();
  return direction == CONVJIT_CONV_FWD       ? t.y.values()
         : direction == CONVJIT_CONV_BWDDATA ? t.x.values()
                                             : t.w.values();
}

std::string served(convjit_plan_t* plan, std::int64_t batch) {
  char buf[64];
  EXPECT_EQ(convjit_plan_backend(plan, batch, buf, sizeof buf, nullptr), CONVJIT_STATUS_SUCCESS)
      << convjit_last_error_message();
  return buf;
}

constexpr convjit_conv_direction_t kDirections[] = {CONVJIT_CONV_FWD, CONVJIT_CONV_BWDDATA,
                                                    CONVJIT_CONV_BWDFILT};

// Random cases, every direction, each pinned backend the host has: the
// plan's output equals the direct call's under the same backend to f32
// rounding of the same sums (the direct call is served by the chain; the
// reference and oneDNN's strided and blocked layouts may sum in another
// order, so 1e-5 relative, for reductions of at most a few hundred terms).
TEST(Plans, EveryDirectionComputesWhatTheDirectCallComputes) {
  std::mt19937 rng(41);
  std::vector<std::pair<const char*, const char*>> pins = {{"reference", ""}, {"", ""}};
  if (OnednnLibrary::instance().available().is_ok())
    pins.insert(pins.end(), {{"onednn", "strided"}, {"onednn", "blocked"}});
  for (int trial = 0; trial < 12; ++trial) {
    const ConvCase c = random_conv_case(rng, 1 + trial % 3);
    auto t = make_conv_tensors<float>(c);
    t.x.fill_random(rng), t.w.fill_random(rng), t.y.fill_random(rng);
    for (convjit_conv_direction_t direction : kDirections)
      for (const auto& [backend, variant] : pins) {
        convjit_plan_t* plan = nullptr;
        ASSERT_EQ(
            convjit_plan_create(name_of(t, direction).c_str(), &kHost, backend, variant, &plan),
            CONVJIT_STATUS_SUCCESS)
            << c.describe() << ": " << convjit_last_error_message();
        const auto want = direct(t, direction), got = planned(t, direction, plan, 0);
        double scale = 1e-6;
        for (double v : want) scale = std::max(scale, std::abs(v));
        for (std::size_t i = 0; i < want.size(); ++i)
          ASSERT_NEAR(got[i], want[i], 1e-5 * scale) << c.describe() << " " << backend << " " << i;
        if (*backend) {
          EXPECT_EQ(served(plan, 0).rfind(backend, 0), 0u);
        }
        if (*variant) {
          EXPECT_EQ(served(plan, 0), std::string(backend) + "[" + variant + "]");
        }
        convjit_plan_destroy(plan);
      }
  }
}

TEST(Plans, ASymbolicPlanTakesItsBatchPerCall) {
  std::mt19937 rng(42);
  ConvCase c = random_conv_case(rng, 2);
  convjit_plan_t* plan = nullptr;
  for (std::int64_t batch : {3, 1, 3, 5}) {
    c.batch = batch;
    auto t = make_conv_tensors<float>(c);
    t.x.fill_random(rng), t.w.fill_random(rng), t.y.fill_random(rng);
    if (plan == nullptr) {
      ASSERT_EQ(convjit_plan_create(name_of(t, CONVJIT_CONV_FWD, true).c_str(), &kHost, "reference",
                                    nullptr, &plan),
                CONVJIT_STATUS_SUCCESS)
          << convjit_last_error_message();
    }
    const auto want = direct(t, CONVJIT_CONV_FWD), got = planned(t, CONVJIT_CONV_FWD, plan, batch);
    for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5) << batch;
    size_t bytes = 1;
    EXPECT_EQ(convjit_plan_workspace_size(plan, batch, &bytes), CONVJIT_STATUS_SUCCESS);
    EXPECT_EQ(bytes, 0u);  // the reference needs none
  }
  auto t = make_conv_tensors<float>(c);
  EXPECT_EQ(convjit_plan_execute(plan, 0, t.x.data(), t.w.data(), t.y.data(), 1, 0, nullptr),
            CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(convjit_last_error_message(), "batch 0 must be positive");
  convjit_plan_destroy(plan);
}

convjit_status_t create(const std::string& name, const char* backend, const char* variant,
                        convjit_plan_t** plan, const convjit_device_t* device = &kHost) {
  return convjit_plan_create(name.c_str(), device, backend, variant, plan);
}

TEST(Plans, WhatAPlanCannotBeIsRefusedWithTheReason) {
  auto t = make_conv_tensors<float>({2, 4, 8, 1, {6, 6}, {3, 3}});
  const std::string name = name_of(t, CONVJIT_CONV_FWD);
  convjit_plan_t* plan = reinterpret_cast<convjit_plan_t*>(&t);  // must be reset to NULL
  EXPECT_EQ(create(name, "tuned-library", nullptr, &plan), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(plan, nullptr);
  EXPECT_NE(std::string(convjit_last_error_message()).find("cannot be pinned to tuned-library"),
            std::string::npos);
  EXPECT_EQ(create(name, "nonesuch", nullptr, &plan), CONVJIT_STATUS_NOT_AVAILABLE);
  EXPECT_NE(std::string(convjit_last_error_message()).find("the choices are jit, cudnn"),
            std::string::npos)
      << convjit_last_error_message();
  EXPECT_EQ(create(name, nullptr, "blocked", &plan), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(convjit_last_error_message(), "variant 'blocked' needs a backend");
  EXPECT_NE(create(name, "reference", "tc128x64", &plan), CONVJIT_STATUS_SUCCESS);
  EXPECT_EQ(create("conv2d_garbage", nullptr, nullptr, &plan), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(create(name, nullptr, nullptr, &plan, nullptr), CONVJIT_STATUS_INVALID_ARGUMENT);
  // Other ops are plans too, run through convjit_plan_run, not by slot.
  const std::string pool =
      "maxpool2d_1_8_6_6_0_288_36_6_1_0_2_2_0_1_8_3_3_0_72_9_3_1_0_0_0_0_2_2_0_1_1_0_fwd";
  ASSERT_EQ(create(pool, nullptr, nullptr, &plan), CONVJIT_STATUS_SUCCESS);
  EXPECT_EQ(convjit_plan_execute(plan, 0, t.x.data(), t.w.data(), t.y.data(), 1, 0, nullptr),
            CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(convjit_last_error_message()).find("run it through convjit_plan_run"),
            std::string::npos)
      << convjit_last_error_message();
  convjit_plan_destroy(plan);

  ASSERT_EQ(create(name, "reference", nullptr, &plan), CONVJIT_STATUS_SUCCESS);
  EXPECT_EQ(convjit_plan_execute(plan, 0, nullptr, t.w.data(), t.y.data(), 1, 0, nullptr),
            CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(convjit_last_error_message(), "x_slot is NULL");
  EXPECT_EQ(convjit_plan_execute(plan, 3, t.x.data(), t.w.data(), t.y.data(), 1, 0, nullptr),
            CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(convjit_last_error_message()).find("the plan's concrete batch 2"),
            std::string::npos);
  const convjit_exec_t cuda{{CONVJIT_DEVICE_CUDA, 0}, nullptr, nullptr, 0, 0};
  EXPECT_EQ(convjit_plan_execute(plan, 2, t.x.data(), t.w.data(), t.y.data(), 1, 0, &cuda),
            CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(convjit_last_error_message()).find("a plan runs where it was made"),
            std::string::npos);
  convjit_plan_destroy(plan);
  convjit_plan_destroy(nullptr);
}

convjit_operands_t operands_of(const ExecArgs& a) {
  convjit_operands_t o;
  EXPECT_EQ(convjit_operands_init(&o), CONVJIT_STATUS_SUCCESS);
  EXPECT_EQ(o.norm.momentum, 0.1);
  o.x = a.x, o.w = a.w, o.dy = a.dy, o.out = a.out, o.bias = a.bias, o.residual = a.residual;
  const NormOperands& n = a.norm;
  o.norm = {n.scale,  n.shift,      n.running_mean, n.running_var, n.mean,
            n.invstd, n.scale_grad, n.shift_grad,   n.momentum};
  return o;
}

convjit_plan_t* plan_for(const OpDescriptor& d) {
  convjit_plan_t* plan = nullptr;
  const convjit_device_t host{CONVJIT_DEVICE_HOST, 0};
  EXPECT_EQ(convjit_plan_create(descriptor_name(d).c_str(), &host, nullptr, nullptr, &plan),
            CONVJIT_STATUS_SUCCESS)
      << convjit_last_error_message();
  return plan;
}

// Pools, resizes, bias gradients and fused convolutions (YOLO11n's blocks)
// on their operands, with alpha and beta, against the reference.
TEST(Plans, RunServesEveryOpKindOnItsOperands) {
  std::mt19937 rng(4101);
  std::vector<OpDescriptor> ops = random_pool_descriptors(rng, DataType::f32, 6);
  for (const auto& more : {random_resize_descriptors(rng, DataType::f32, 6),
                           random_bias_descriptors(rng, DataType::f32, 3),
                           random_conv_descriptors(rng, DataType::f32, 3)})
    ops.insert(ops.end(), more.begin(), more.end());
  ModelOptions fused{1, 32};
  fused.fused = true;
  for (const OpDescriptor& d : model_descriptors("yolo11n", fused))
    if (d.has_epilogue() && ops.size() < 24) ops.push_back(d);
  for (const OpDescriptor& d : ops) {
    SCOPED_TRACE(descriptor_name(d));
    convjit_plan_t* plan = plan_for(d);
    ASSERT_NE(plan, nullptr);
    const HostOperands host = random_operands(d, rng, 0.5, 0.25);
    std::vector<unsigned char> got = host.out;
    const convjit_operands_t o = operands_of(host.args(d, got.data()));
    ASSERT_EQ(convjit_plan_run(plan, 0, &o, 0.5, 0.25, nullptr), CONVJIT_STATUS_SUCCESS)
        << convjit_last_error_message();
    expect_matches_reference(d, host, got);
    convjit_plan_destroy(plan);
  }
}

// Batchnorms in every mode: outputs, saved and running statistics and
// parameter gradients as the reference computes them.
TEST(Plans, RunServesBatchNormsInEveryMode) {
  std::mt19937 rng(4102);
  const Case c{{2, 5, 6, 7}, TestLayout::nhwc};
  for (std::int32_t flags :
       {kAffine, kAffine | kNormInference, 0, kAffine | kAllGrads,
        kAffine | kNormInference | kNormGradInput, kNormGradScale | kNormGradShift})
    for (convjit_activation_t act : {CONVJIT_ACTIVATION_IDENTITY, CONVJIT_ACTIVATION_SILU}) {
      const Direction dir = (flags & kNormGradMask) != 0 ? Direction::bwd : Direction::fwd;
      auto d = descriptor(c, DataType::f32, dir, flags, act);
      ASSERT_TRUE(d.is_ok()) << d.status().message();
      SCOPED_TRACE(descriptor_name(d.value()));
      NormCall want = random_call(d.value(), rng, 1, 0), got = want;
      reference::batchnorm_reference(d.value(), want.args(d.value()));
      convjit_plan_t* plan = plan_for(d.value());
      ASSERT_NE(plan, nullptr);
      const convjit_operands_t o = operands_of(got.args(d.value()));
      ASSERT_EQ(convjit_plan_run(plan, 0, &o, 1, 0, nullptr), CONVJIT_STATUS_SUCCESS)
          << convjit_last_error_message();
      for (std::size_t i = 0; i < got.out.size() / 4; ++i)
        EXPECT_NEAR(load_element(got.out.data(), i, DataType::f32),
                    load_element(want.out.data(), i, DataType::f32), 1e-4)
            << i;
      expect_channels_near(got.running_var, want.running_var, "running_var");
      expect_channels_near(got.invstd, want.invstd, "invstd");
      expect_channels_near(got.scale_grad, want.scale_grad, "scale_grad");
      expect_channels_near(got.shift_grad, want.shift_grad, "shift_grad");
      convjit_plan_destroy(plan);
    }
}

// Each operand the op needs, left NULL, is named with what it is for.
TEST(Plans, RunNamesTheOperandItMisses) {
  auto bwd = descriptor({{2, 3, 4, 4}, TestLayout::nchw}, DataType::f32, Direction::bwd,
                        kAffine | kAllGrads);
  ASSERT_TRUE(bwd.is_ok());
  std::mt19937 rng(4103);
  NormCall call = random_call(bwd.value(), rng, 1, 0);
  convjit_plan_t* plan = plan_for(bwd.value());
  ASSERT_NE(plan, nullptr);
  const convjit_operands_t full = operands_of(call.args(bwd.value()));
  struct Missing {
    const char* expected;
    void (*clear)(convjit_operands_t&);
  };
  const Missing cases[] = {
      {"operands.dy is NULL", [](convjit_operands_t& o) { o.dy = nullptr; }},
      {"operands.out (dx: the mask selects it) is NULL",
       [](convjit_operands_t& o) { o.out = nullptr; }},
      {"operands.norm.saved_invstd (a training bwd reads it) is NULL",
       [](convjit_operands_t& o) { o.norm.saved_invstd = nullptr; }},
      {"operands.norm.shift_grad (the mask selects it) is NULL",
       [](convjit_operands_t& o) { o.norm.shift_grad = nullptr; }},
  };
  for (const Missing& m : cases) {
    convjit_operands_t o = full;
    m.clear(o);
    EXPECT_EQ(convjit_plan_run(plan, 0, &o, 1, 0, nullptr), CONVJIT_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(convjit_last_error_message()).find(m.expected), std::string::npos)
        << convjit_last_error_message();
  }
  EXPECT_NE(std::string(convjit_last_error_message()).find("the plan's batchnorm bwd needs it"),
            std::string::npos);
  EXPECT_EQ(convjit_plan_run(plan, 0, nullptr, 1, 0, nullptr), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(convjit_operands_init(nullptr), CONVJIT_STATUS_INVALID_ARGUMENT);
  convjit_plan_destroy(plan);
}

}  // namespace
}  // namespace convjit::test
