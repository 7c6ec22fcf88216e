// C API behaviour: status strings, the thread-local last error, name
// buffers, devices, and the backend report.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>

#include "c_callers/c_callers.h"
#include "convjit/convjit.h"
#include "dispatcher/backends/onednn/onednn_library.hpp"
#include "support/problems.hpp"
#include "version.hpp"

namespace convjit::test {
namespace {

TEST(CApi, VersionAndStatusStrings) {
  EXPECT_STREQ(convjit_version_string(), kVersionString);
  EXPECT_STREQ(convjit_status_string(CONVJIT_STATUS_SUCCESS), "success");
  EXPECT_STREQ(convjit_status_string(CONVJIT_STATUS_NOT_AVAILABLE), "not available");
  EXPECT_STREQ(convjit_status_string(static_cast<convjit_status_t>(6)), "internal error");
  for (int unknown : {-1, 7, 1000}) EXPECT_STREQ(c_status_string(unknown), "unknown status");
}

TEST(CApi, LastErrorIsPerThreadAndClearedBySuccess) {
  convjit_conv_params_t params;
  EXPECT_EQ(convjit_conv_params_init(&params, 4), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(convjit_last_error_message()).find("spatial_dims = 4"), std::string::npos);
  std::string other_thread_message = "unset";
  std::thread([&] { other_thread_message = convjit_last_error_message(); }).join();
  EXPECT_EQ(other_thread_message, "");
  EXPECT_EQ(convjit_conv_params_init(&params, 2), CONVJIT_STATUS_SUCCESS);
  EXPECT_STREQ(convjit_last_error_message(), "");
}

TEST(CApi, NameBufferSizeQueryAndTooSmallBuffer) {
  auto t = make_conv_tensors<float>({1, 2, 2, 1, {5, 5}, {3, 3}});
  size_t required = 0;
  ASSERT_EQ(convjit_conv_descriptor_name(&t.params, CONVJIT_CONV_FWD, &t.x.desc(), &t.w.desc(),
                                         &t.y.desc(), 0, nullptr, 0, &required),
            CONVJIT_STATUS_SUCCESS);
  std::vector<char> buf(required);
  char tiny[8];
  EXPECT_EQ(convjit_conv_descriptor_name(&t.params, CONVJIT_CONV_FWD, &t.x.desc(), &t.w.desc(),
                                         &t.y.desc(), 0, tiny, sizeof tiny, &required),
            CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(convjit_last_error_message()).find("8 bytes is too small"),
            std::string::npos);
  ASSERT_EQ(convjit_conv_descriptor_name(&t.params, CONVJIT_CONV_FWD, &t.x.desc(), &t.w.desc(),
                                         &t.y.desc(), 0, buf.data(), buf.size(), &required),
            CONVJIT_STATUS_SUCCESS);
  EXPECT_EQ(std::strlen(buf.data()) + 1, required);
  EXPECT_EQ(std::string(buf.data()).rfind("conv2d_1_2_5_5_0_50_25_5_1_0_", 0), 0u) << buf.data();
  EXPECT_EQ(
      convjit_conv_descriptor_name(&t.params, static_cast<convjit_conv_direction_t>(3), &t.x.desc(),
                                   &t.w.desc(), &t.y.desc(), 0, nullptr, 0, &required),
      CONVJIT_STATUS_INVALID_ARGUMENT);
}

// Issue 15, item 1: a NULL x with a valid y crashed (check_y read x first).
TEST(CApi, ANullTensorIsNamedNeverDereferenced) {
  auto t = make_pool_tensors<float>({1, 2, {6, 6}, {2, 2}, {2, 2}});
  size_t required = 0;
  for (auto direction : {CONVJIT_POOL_FWD, CONVJIT_POOL_BWD}) {
    EXPECT_EQ(convjit_pool_descriptor_name(&t.params, direction, nullptr, &t.y.desc(), 0, nullptr,
                                           0, &required),
              CONVJIT_STATUS_INVALID_ARGUMENT);
    EXPECT_NE(std::string(convjit_last_error_message()).find("descriptor is NULL"),
              std::string::npos)
        << convjit_last_error_message();
  }
  auto c = make_conv_tensors<float>({1, 2, 2, 1, {5, 5}, {3, 3}});
  for (auto direction : {CONVJIT_CONV_FWD, CONVJIT_CONV_BWDDATA, CONVJIT_CONV_BWDFILT}) {
    EXPECT_EQ(convjit_conv_descriptor_name(&c.params, direction, nullptr, &c.w.desc(), &c.y.desc(),
                                           0, nullptr, 0, &required),
              CONVJIT_STATUS_INVALID_ARGUMENT);
    EXPECT_EQ(convjit_conv_descriptor_name(&c.params, direction, &c.x.desc(), nullptr, &c.y.desc(),
                                           0, nullptr, 0, &required),
              CONVJIT_STATUS_INVALID_ARGUMENT);
  }
}

// Issue 15, item 7: a NULL buffer with a size is not "too small".
TEST(CApi, ANullNameBufferWithASizeSaysSo) {
  auto t = make_conv_tensors<float>({1, 2, 2, 1, {5, 5}, {3, 3}});
  size_t required = 0;
  EXPECT_EQ(convjit_conv_descriptor_name(&t.params, CONVJIT_CONV_FWD, &t.x.desc(), &t.w.desc(),
                                         &t.y.desc(), 0, nullptr, 64, &required),
            CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(convjit_last_error_message()),
            "name buffer is NULL but buf_size is 64; pass a buffer of at least " +
                std::to_string(required) + " bytes, or NULL with buf_size 0 to ask for the size");
}

// Issue 15, item 2: C may put any int in an enum parameter or field.  Each
// is refused by its raw value; loading it as the C++ enum first was
// undefined (UBSan, in the sanitizer build, stopped on it) and let the
// compiler drop the range check.
constexpr int kOutOfRange[] = {
    -1, 3, 4, 7, 1000, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()};

void expect_refused(convjit_status_t status, const std::string& fragment) {
  EXPECT_EQ(status, CONVJIT_STATUS_INVALID_ARGUMENT) << fragment;
  EXPECT_NE(std::string(convjit_last_error_message()).find(fragment), std::string::npos)
      << convjit_last_error_message();
}

TEST(CApi, EnumValuesOutOfRangeFromCAreRefusedByTheirRawValue) {
  convjit_tensor_desc_t desc;
  const int64_t dims[] = {1, 2, 5, 5};
  auto conv = make_conv_tensors<float>({1, 2, 2, 1, {5, 5}, {3, 3}});
  auto pool = make_pool_tensors<float>({1, 2, {6, 6}, {2, 2}, {2, 2}});
  for (int v : kOutOfRange) {
    const std::string value = std::to_string(v);
    if (v != 3)  // 3 is f64
      expect_refused(c_tensor_desc_init(&desc, v, 4, dims, CONVJIT_LAYOUT_NCHW),
                     "dtype = " + value + " is not a convjit_dtype_t");
    expect_refused(c_tensor_desc_init(&desc, CONVJIT_DTYPE_F32, 4, dims, v),
                   "layout = " + value + " is not a convjit_layout_t");
    expect_refused(
        c_conv_descriptor_name(&conv.params, v, &conv.x.desc(), &conv.w.desc(), &conv.y.desc()),
        "direction = " + value + " is not a convjit_conv_direction_t");
    expect_refused(c_pool_descriptor_name(&pool.params, v, &pool.x.desc(), &pool.y.desc()),
                   "direction = " + value + " is not a convjit_pool_direction_t");
    convjit_pool_params_t params;
    expect_refused(c_pool_params_init(&params, 2, v),
                   "mode = " + value + " is not a convjit_pool_mode_t");
  }
}

TEST(CApi, EnumFieldsOutOfRangeFromCAreRefusedByTheirRawValue) {
  auto conv = make_conv_tensors<float>({1, 2, 2, 1, {5, 5}, {3, 3}});
  auto pool = make_pool_tensors<float>({1, 2, {6, 6}, {2, 2}, {2, 2}});
  for (int v : kOutOfRange) {
    const std::string value = std::to_string(v);
    if (v != 3) {
      convjit_tensor_desc_t x = conv.x.desc();
      c_set_dtype(&x, v);
      expect_refused(c_conv_descriptor_name(&conv.params, CONVJIT_CONV_FWD, &x, &conv.w.desc(),
                                            &conv.y.desc()),
                     "x dtype = " + value + " is not a convjit_dtype_t");
    }
    convjit_pool_params_t params = pool.params;
    c_set_pool_mode(&params, v);
    expect_refused(
        c_pool_descriptor_name(&params, CONVJIT_POOL_FWD, &pool.x.desc(), &pool.y.desc()),
        "pool mode = " + value + " is not a convjit_pool_mode_t");
    expect_refused(convjit_pool_backward(&params, &pool.x.desc(), pool.x.data(), &pool.y.desc(),
                                         pool.y.data(), pool.x.data(), 1.0, 0.0, nullptr),
                   "pool mode = " + value + " is not a convjit_pool_mode_t");
    convjit_exec_t exec{{CONVJIT_DEVICE_HOST, 0}, nullptr, nullptr, 0, 0};
    c_set_device_kind(&exec, v);
    expect_refused(
        convjit_conv_forward(&conv.params, &conv.x.desc(), conv.x.data(), &conv.w.desc(),
                             conv.w.data(), &conv.y.desc(), conv.y.data(), 1.0, 0.0, &exec),
        "device kind " + value + " is neither CONVJIT_DEVICE_HOST nor");
  }
}

// Issue 15, item 7: pool params with a mode that is no convjit_pool_mode_t.
TEST(CApi, PoolParamsInitRefusesAnInvalidMode) {
  convjit_pool_params_t params;
  for (int mode : {3}) {  // in the enum's value range (its bits), so not UB to pass
    EXPECT_EQ(convjit_pool_params_init(&params, 2, static_cast<convjit_pool_mode_t>(mode)),
              CONVJIT_STATUS_INVALID_ARGUMENT)
        << mode;
    EXPECT_NE(std::string(convjit_last_error_message())
                  .find("mode = " + std::to_string(mode) + " is not a convjit_pool_mode_t"),
              std::string::npos)
        << convjit_last_error_message();
  }
  EXPECT_EQ(convjit_pool_params_init(&params, 2, CONVJIT_POOL_AVG_INCLUDE_PAD),
            CONVJIT_STATUS_SUCCESS);
}

TEST(CApi, HostExecutionReportsTheBackendThatServedIt) {
  auto t = make_conv_tensors<float>({1, 2, 2, 1, {5, 5}, {3, 3}});
  const convjit_exec_t host{{CONVJIT_DEVICE_HOST, 0}, nullptr, nullptr, 0, 0};
  ASSERT_EQ(convjit_conv_forward(&t.params, &t.x.desc(), t.x.data(), &t.w.desc(), t.w.data(),
                                 &t.y.desc(), t.y.data(), 1.0, 0.0, &host),
            CONVJIT_STATUS_SUCCESS)
      << convjit_last_error_message();
  EXPECT_STREQ(convjit_last_backend(),
               OnednnLibrary::instance().available().is_ok() ? "onednn" : "reference");
}

// The fused forward against the plain forward and the epilogue's
// definition, computed here: y = silu(alpha conv + bias + residual) + beta y.
TEST(CApi, FusedForwardAppliesItsEpilogueToThePlainForward) {
  std::mt19937 rng(5);
  auto t = make_conv_tensors<float>({2, 3, 4, 1, {6, 5}, {3, 3}});
  t.x.fill_random(rng), t.w.fill_random(rng), t.y.fill_random(rng);
  HostTensor<float> plain = t.y, residual = t.y;
  residual.fill_random(rng);
  const std::vector<float> bias = {0.5f, -0.25f, 1.0f, -2.0f};
  const std::vector<double> before = t.y.values();
  ASSERT_EQ(convjit_conv_forward(&t.params, &t.x.desc(), t.x.data(), &t.w.desc(), t.w.data(),
                                 &plain.desc(), plain.data(), 1.0, 0.0, nullptr),
            CONVJIT_STATUS_SUCCESS)
      << convjit_last_error_message();
  const convjit_epilogue_t epilogue{CONVJIT_ACTIVATION_SILU, bias.data(), residual.data()};
  ASSERT_EQ(convjit_conv_forward_fused(&t.params, &t.x.desc(), t.x.data(), &t.w.desc(), t.w.data(),
                                       &epilogue, &t.y.desc(), t.y.data(), 0.5, 0.25, nullptr),
            CONVJIT_STATUS_SUCCESS)
      << convjit_last_error_message();
  const auto conv = plain.values(), res = residual.values(), got = t.y.values();
  const std::size_t pixels = got.size() / (2 * 4);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double v = 0.5 * conv[i] + bias[i / pixels % 4] + res[i];
    EXPECT_NEAR(got[i], v / (1 + std::exp(-v)) + 0.25 * before[i], 1e-5) << i;
  }
  std::string name, plain_name;
  ASSERT_TRUE(conv_fused_descriptor_name(t.params, t.x.desc(), t.w.desc(),
                                         Epilogue(CONVJIT_ACTIVATION_SILU, bias.data()), t.y.desc(),
                                         false, name)
                  .is_ok());
  ASSERT_TRUE(conv_descriptor_name(t.params, CONVJIT_CONV_FWD, t.x.desc(), t.w.desc(), t.y.desc(),
                                   false, plain_name)
                  .is_ok());
  EXPECT_EQ(name, plain_name + "_ep_silu_bias");
  ASSERT_TRUE(conv_fused_descriptor_name(t.params, t.x.desc(), t.w.desc(), Epilogue(), t.y.desc(),
                                         false, name)
                  .is_ok());
  EXPECT_EQ(name, plain_name);
}

TEST(CApi, FusedForwardRefusesABadActivationAndYAsItsResidual) {
  auto t = make_conv_tensors<float>({1, 2, 2, 1, {5, 5}, {3, 3}});
  t.y.fill(9.0);
  convjit_epilogue_t epilogue{CONVJIT_ACTIVATION_RELU, nullptr, t.y.data()};
  expect_refused(
      convjit_conv_forward_fused(&t.params, &t.x.desc(), t.x.data(), &t.w.desc(), t.w.data(),
                                 &epilogue, &t.y.desc(), t.y.data(), 1.0, 0.0, nullptr),
      "epilogue residual is y itself");
  std::memset(&epilogue.activation, 0x7f, sizeof epilogue.activation);
  epilogue.residual = nullptr;
  expect_refused(
      convjit_conv_forward_fused(&t.params, &t.x.desc(), t.x.data(), &t.w.desc(), t.w.data(),
                                 &epilogue, &t.y.desc(), t.y.data(), 1.0, 0.0, nullptr),
      "is not a convjit_activation_t");
  for (double v : t.y.values()) EXPECT_EQ(v, 9.0);
}

TEST(CApi, CudaDeviceIsNotAvailableInThisBuild) {
  auto t = make_conv_tensors<float>({1, 2, 2, 1, {5, 5}, {3, 3}});
  t.y.fill(9.0);
  const convjit_exec_t cuda{{CONVJIT_DEVICE_CUDA, 0}, nullptr, nullptr, 0, 0};
  EXPECT_EQ(convjit_conv_forward(&t.params, &t.x.desc(), t.x.data(), &t.w.desc(), t.w.data(),
                                 &t.y.desc(), t.y.data(), 1.0, 0.0, &cuda),
            CONVJIT_STATUS_NOT_AVAILABLE);
  EXPECT_NE(std::string(convjit_last_error_message()).find("on cuda:0"), std::string::npos)
      << convjit_last_error_message();
  for (double v : t.y.values()) EXPECT_EQ(v, 9.0);
  const convjit_exec_t bogus{{static_cast<convjit_device_kind_t>(1), -2}, nullptr, nullptr, 0, 0};
  EXPECT_EQ(convjit_conv_forward(&t.params, &t.x.desc(), t.x.data(), &t.w.desc(), t.w.data(),
                                 &t.y.desc(), t.y.data(), 1.0, 0.0, &bogus),
            CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(std::string(convjit_last_error_message()).find("ordinal -2"), std::string::npos);
}

TEST(CApi, PoolBackwardNeedsXOnlyForMax) {
  PoolCase c{1, 1, {4, 4}, {2, 2}, {2, 2}, {}, {}, {}, CONVJIT_POOL_AVG_EXCLUDE_PAD};
  auto t = make_pool_tensors<float>(c);
  HostTensor<float> dy = t.y, dx = t.x;
  dy.fill(4);
  EXPECT_TRUE(
      pool_backward(t.params, t.x.desc(), nullptr, dy.desc(), dy.data(), dx.data()).is_ok());
  for (double v : dx.values()) EXPECT_EQ(v, 1.0);
  c.mode = CONVJIT_POOL_MAX;
  auto m = make_pool_tensors<float>(c);
  const Status s = pool_backward(m.params, m.x.desc(), nullptr, dy.desc(), dy.data(), dx.data());
  EXPECT_EQ(s.code(), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_NE(s.message().find("x (max pooling recomputes the argmax from it) is NULL"),
            std::string::npos);
}

}  // namespace
}  // namespace convjit::test
