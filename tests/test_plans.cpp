// Plans (convjit_plan_*): a conv descriptor pinned to one backend and
// variant computes what the direct call computes, in every direction, and
// refuses what it cannot be.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "convjit/convjit.h"
#include "convjit/convjit.hpp"
#include "dispatcher/backends/onednn/onednn_library.hpp"
#include "support/problems.hpp"

namespace convjit::test {
namespace {

std::string name_of(const ConvTensors<float>& t, convjit_conv_direction_t direction,
                    bool symbolic = false) {
  std::string name;
  EXPECT_TRUE(conv_descriptor_name(t.params, direction, t.x.desc(), t.w.desc(), t.y.desc(),
                                   symbolic, name)
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
  return direction == CONVJIT_CONV_FWD ? t.y.values()
         : direction == CONVJIT_CONV_BWDDATA ? t.x.values()
                                             : t.w.values();
}

std::vector<double> planned(ConvTensors<float> t, convjit_conv_direction_t direction,
                            convjit_plan_t* plan, std::int64_t batch) {
  EXPECT_EQ(convjit_plan_execute(plan, batch, t.x.data(), t.w.data(), t.y.data(), 0.5, 0.25,
                                 nullptr),
            CONVJIT_STATUS_SUCCESS)
      << convjit_last_error_message();
  return direction == CONVJIT_CONV_FWD ? t.y.values()
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
const convjit_device_t kHost{CONVJIT_DEVICE_HOST, 0};

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
        ASSERT_EQ(convjit_plan_create(name_of(t, direction).c_str(), &kHost, backend, variant,
                                      &plan),
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
      ASSERT_EQ(convjit_plan_create(name_of(t, CONVJIT_CONV_FWD, true).c_str(), &kHost,
                                    "reference", nullptr, &plan),
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
  const std::string pool = "maxpool2d_1_8_6_6_0_288_36_6_1_0_2_2_0_1_8_3_3_0_72_9_3_1_0_0_0_0_2_2_0_1_1_0_fwd";
  EXPECT_EQ(create(pool, nullptr, nullptr, &plan), CONVJIT_STATUS_UNSUPPORTED);
  EXPECT_NE(std::string(convjit_last_error_message()).find("plans serve convolutions"),
            std::string::npos);

  ASSERT_EQ(create(name, "reference", nullptr, &plan), CONVJIT_STATUS_SUCCESS);
  EXPECT_EQ(convjit_plan_execute(plan, 0, nullptr, t.w.data(), t.y.data(), 1, 0, nullptr),
            CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_STREQ(convjit_last_error_message(), "x_slot is NULL");
  EXPECT_EQ(convjit_plan_execute(plan, 3, t.x.data(), t.w.data(), t.y.data(), 1, 0, nullptr),
            CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(convjit_last_error_message()).find("the plan's concrete batch 2"),
            std::string::npos);
  const convjit_exec_t cuda{{CONVJIT_DEVICE_CUDA, 0}, nullptr, nullptr, 0};
  EXPECT_EQ(convjit_plan_execute(plan, 2, t.x.data(), t.w.data(), t.y.data(), 1, 0, &cuda),
            CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(convjit_last_error_message()).find("a plan runs where it was made"),
            std::string::npos);
  convjit_plan_destroy(plan);
  convjit_plan_destroy(nullptr);
}

}  // namespace
}  // namespace convjit::test
