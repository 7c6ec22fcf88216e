// Every validation rule, driven through the public API: each bad input is
// rejected with INVALID_ARGUMENT (or UNSUPPORTED) and a message naming the
// field and the fix, and no output is written.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>

#include "support/problems.hpp"

namespace convjit::test {
namespace {

constexpr std::int64_t kHuge = std::numeric_limits<std::int64_t>::max() / 2;

struct ConvSetup {
  ConvParams params{2};
  TensorDesc x, w, y;
  std::vector<float> buffer = std::vector<float>(4096, 42.0f);

  ConvSetup() {
    EXPECT_TRUE(TensorDesc::contiguous(x, CONVJIT_DTYPE_F32, {2, 4, 8, 8}).is_ok());
    EXPECT_TRUE(TensorDesc::contiguous(w, CONVJIT_DTYPE_F32, {6, 4, 3, 3}).is_ok());
    EXPECT_TRUE(TensorDesc::contiguous(y, CONVJIT_DTYPE_F32, {2, 6, 6, 6}).is_ok());
  }
  Status forward() {
    return conv_forward(params, x, buffer.data(), w, buffer.data(), y, buffer.data() + 2048);
  }
};

void expect_error(const Status& s, convjit_status_t code,
                  std::initializer_list<const char*> fragments) {
  ASSERT_EQ(s.code(), code) << s.message();
  for (const char* fragment : fragments)
    EXPECT_NE(s.message().find(fragment), std::string::npos)
        << "missing '" << fragment << "' in: " << s.message();
}

TEST(Validation, BaselineProblemIsValid) {
  ConvSetup s;
  const Status status = s.forward();
  EXPECT_TRUE(status.is_ok()) << status.message();
}

TEST(Validation, ChannelMismatchBetweenXAndW) {
  ConvSetup s;
  ASSERT_TRUE(TensorDesc::contiguous(s.w, CONVJIT_DTYPE_F32, {6, 3, 3, 3}).is_ok());
  expect_error(s.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"channel mismatch", "x has C = 4", "w shape[1] = 3", "must be C / groups = 4"});
}

TEST(Validation, GroupsMustDivideChannelsAndFilters) {
  ConvSetup s;
  s.params.groups = 3;
  expect_error(s.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"groups = 3 does not divide x channels C = 4", "divides both C and K"});
  ConvSetup k;
  k.params.groups = 4;
  ASSERT_TRUE(TensorDesc::contiguous(k.w, CONVJIT_DTYPE_F32, {6, 1, 3, 3}).is_ok());
  expect_error(k.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"groups = 4 does not divide the filter count K = 6"});
  ConvSetup zero;
  zero.params.groups = 0;
  expect_error(zero.forward(), CONVJIT_STATUS_INVALID_ARGUMENT, {"groups = 0 must be at least 1"});
}

TEST(Validation, NonPositiveSizes) {
  for (std::int64_t bad : {0, -3}) {
    ConvSetup s;
    s.x.dims[2] = bad;
    expect_error(s.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
                 {"x shape[2] =", "must be positive"});
    ConvSetup w;
    w.w.dims[0] = bad;
    expect_error(w.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
                 {"w shape[0] =", "must be positive"});
  }
  TensorDesc t;
  expect_error(TensorDesc::contiguous(t, CONVJIT_DTYPE_F32, {1, 0, 4}),
               CONVJIT_STATUS_INVALID_ARGUMENT, {"dims[1] = 0 must be positive"});
}

TEST(Validation, StrideAndDilationBelowOne) {
  ConvSetup s;
  s.params.stride[1] = 0;
  expect_error(s.forward(), CONVJIT_STATUS_INVALID_ARGUMENT, {"stride[1] = 0 must be at least 1"});
  ConvSetup d;
  d.params.dilation[0] = -1;
  expect_error(d.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"dilation[0] = -1 must be at least 1"});
  ConvSetup p;
  p.params.pad_begin[0] = -1;
  expect_error(p.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"pad begin[0] = -1 must be non-negative"});
}

TEST(Validation, PaddingLargerThanTheWindowAllows) {
  // Convolutions take any non-negative padding, as PyTorch does (issue 36,
  // item 5): rows whose window sees only padding are alpha * 0 + beta * y.
  ConvSetup s;
  s.params.pad_begin[0] = s.params.pad_end[0] = 3;  // 3x3 filter: extent 3
  ASSERT_TRUE(TensorDesc::contiguous(s.y, CONVJIT_DTYPE_F32, {2, 6, 12, 6}).is_ok());
  const Status padded = s.forward();
  ASSERT_TRUE(padded.is_ok()) << padded.message();
  const float* y = s.buffer.data() + 2048;
  for (std::int64_t plane = 0; plane < 2 * 6; ++plane)
    for (std::int64_t col = 0; col < 6; ++col) {
      const float* rows = y + plane * 12 * 6 + col;
      EXPECT_EQ(rows[0], 0.0f) << "plane " << plane << ": row 0 sees only padding";
      EXPECT_EQ(rows[11 * 6], 0.0f) << "plane " << plane << ": row 11 sees only padding";
      EXPECT_EQ(rows[1 * 6], 42.0f * 42.0f * 4 * 3) << "row 1 sees x's first row";
    }
  // Pooling: up to the window less one (ONNX's rule; issue 15, item 6).
  PoolParams p(2, CONVJIT_POOL_MAX);
  p.window[0] = p.window[1] = 3;
  p.pad_begin[1] = 2;
  TensorDesc x;
  ASSERT_TRUE(TensorDesc::contiguous(x, CONVJIT_DTYPE_F32, {1, 1, 8, 8}).is_ok());
  std::int64_t y_dims[4];
  const Status wide = pool_output_dims(p, x, false, y_dims);
  EXPECT_TRUE(wide.is_ok()) << wide.message();
  EXPECT_EQ(y_dims[3], 8);
  p.pad_begin[1] = 3;
  expect_error(
      pool_output_dims(p, x, false, y_dims), CONVJIT_STATUS_INVALID_ARGUMENT,
      {"padding [3, 0] in spatial dim 1 must be smaller than the window extent 3", "at most 2"});
}

TEST(Validation, WindowLargerThanPaddedInput) {
  ConvSetup s;
  ASSERT_TRUE(TensorDesc::contiguous(s.w, CONVJIT_DTYPE_F32, {6, 4, 9, 3}).is_ok());
  expect_error(s.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"the window does not fit in spatial dim 0", "x size 8"});
}

TEST(Validation, InconsistentYShapeSaysWhatItShouldBe) {
  ConvSetup s;
  ASSERT_TRUE(TensorDesc::contiguous(s.y, CONVJIT_DTYPE_F32, {2, 6, 7, 6}).is_ok());
  expect_error(s.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"y shape [2, 6, 7, 6] is inconsistent", "it should be [2, 6, 6, 6]"});
  ConvSetup k;
  ASSERT_TRUE(TensorDesc::contiguous(k.y, CONVJIT_DTYPE_F32, {2, 5, 6, 6}).is_ok());
  expect_error(k.forward(), CONVJIT_STATUS_INVALID_ARGUMENT, {"should be [2, 6, 6, 6]"});
  // Pools accept the floor or the ceil shape and name both otherwise.
  PoolParams p(1, CONVJIT_POOL_MAX);
  p.window[0] = p.stride[0] = 2;
  TensorDesc x, y;
  ASSERT_TRUE(TensorDesc::contiguous(x, CONVJIT_DTYPE_F32, {1, 1, 5}).is_ok());
  std::vector<float> data(16);
  for (std::int64_t width : {2, 3}) {
    ASSERT_TRUE(TensorDesc::contiguous(y, CONVJIT_DTYPE_F32, {1, 1, width}).is_ok());
    EXPECT_TRUE(pool_forward(p, x, data.data(), y, data.data() + 8).is_ok());
  }
  ASSERT_TRUE(TensorDesc::contiguous(y, CONVJIT_DTYPE_F32, {1, 1, 4}).is_ok());
  expect_error(pool_forward(p, x, data.data(), y, data.data() + 8), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"y shape [1, 1, 4]", "should be [1, 1, 2] (or [1, 1, 3] in ceil mode)"});
}

TEST(Validation, NegativeOrOverlappingOutputStrides) {
  ConvSetup neg;
  neg.y.strides[3] = -1;
  expect_error(neg.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"y strides[3] = -1 must be non-negative"});
  ConvSetup overlap;
  overlap.y.strides[2] = 3;  // rows of 6 elements 3 apart
  expect_error(overlap.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"output y strides [216, 36, 3, 1] make elements of shape [2, 6, 6, 6] overlap"});
  ConvSetup broadcast;
  broadcast.y.strides[1] = 0;
  expect_error(broadcast.forward(), CONVJIT_STATUS_INVALID_ARGUMENT, {"overlap"});
  // Inputs may alias themselves (broadcast), outputs of bwdfilt are dw.
  ConvSetup input;
  input.x.strides[0] = 0;
  EXPECT_TRUE(input.forward().is_ok());
  ConvSetup filt;
  filt.w.strides[0] = 1;
  const Status s = conv_backward_filter(filt.params, filt.x, filt.buffer.data(), filt.y,
                                        filt.buffer.data(), filt.w, filt.buffer.data() + 2048);
  expect_error(s, CONVJIT_STATUS_INVALID_ARGUMENT, {"output dw strides", "overlap"});
}

TEST(Validation, SizesOverflowing64Bits) {
  ConvSetup count;
  count.x = TensorDesc::strided(CONVJIT_DTYPE_F32, {kHuge, 4, 8, 8}, {256, 64, 8, 1});
  count.y = TensorDesc::strided(CONVJIT_DTYPE_F32, {kHuge, 6, 6, 6}, {216, 36, 6, 1});
  expect_error(count.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"x shape", "addresses more than 2^63 bytes"});
  ConvSetup offset;
  offset.x.strides[0] = kHuge;
  expect_error(offset.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"x shape [2, 4, 8, 8] with strides"});
  TensorDesc t;
  expect_error(TensorDesc::contiguous(t, CONVJIT_DTYPE_F32, {kHuge, kHuge, 4}),
               CONVJIT_STATUS_INVALID_ARGUMENT, {"overflows 64 bits"});
}

TEST(Validation, HugeParametersAreRejectedBeforeAnyArithmeticOverflows) {
  ConvSetup dilation;
  dilation.params.dilation[0] = std::numeric_limits<std::int64_t>::max();
  expect_error(dilation.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"dilation[0] = 9223372036854775807 exceeds 2147483647"});
  ConvSetup pad;
  pad.params.pad_end[1] = std::numeric_limits<std::int64_t>::max();
  expect_error(pad.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"pad end[1] = 9223372036854775807 exceeds"});
  ConvSetup stride;
  stride.params.stride[1] = std::int64_t{1} << 40;
  expect_error(stride.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"stride[1] = 1099511627776 exceeds"});
  ConvSetup input;
  input.x = TensorDesc::strided(CONVJIT_DTYPE_F32,
                                {1, 4, std::numeric_limits<std::int64_t>::max(), 8}, {0, 0, 1, 0});
  expect_error(input.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"addresses more than 2^63 bytes"});
}

// Issue 15, item 2: a failed check stops the arithmetic that assumed it
// passed (UBSan, in the sanitizer build, caught both overflows).
TEST(Validation, ArithmeticAfterAFailedCheckCannotOverflow) {
  ConvSetup groups;
  groups.params.groups = std::numeric_limits<std::int64_t>::max();  // w shape[1] * groups
  expect_error(groups.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"groups = 9223372036854775807 does not divide x channels C = 4"});
  ConvSetup y;  // the overlap check's reach past an extent already refused
  y.y = TensorDesc::strided(CONVJIT_DTYPE_F32, {2, 6, 6, 6}, {kHuge, kHuge, 6, 1});
  expect_error(y.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"y shape [2, 6, 6, 6] with strides", "addresses more than 2^63 bytes"});
}

TEST(Validation, DtypesMustAgreeAndBeSupported) {
  ConvSetup mixed;
  mixed.w.dtype = CONVJIT_DTYPE_F16;
  expect_error(mixed.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"w dtype f16 differs from x dtype f32"});
  ConvSetup unknown;
  const int bad_dtype = 9;  // as a C caller could pass; memcpy avoids an out-of-range enum cast
  std::memcpy(&unknown.x.dtype, &bad_dtype, sizeof bad_dtype);
  expect_error(unknown.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"x dtype = 9 is not a convjit_dtype_t"});
  // f64 runs on the host reference only.
  ConvSetup f64;
  f64.x.dtype = f64.w.dtype = f64.y.dtype = CONVJIT_DTYPE_F64;
  std::vector<double> data(4096);
  const Status s = conv_forward(f64.params, f64.x, data.data(), f64.w, data.data(), f64.y,
                                data.data() + 2048, 1, 0, Exec(Device::cuda(0)));
  expect_error(s, CONVJIT_STATUS_UNSUPPORTED, {"f64 is computed on the host device only"});
}

TEST(Validation, AvgPoolingRejectsDilation) {
  PoolParams p(2, CONVJIT_POOL_AVG_EXCLUDE_PAD);
  p.window[0] = p.window[1] = 2;
  p.dilation[1] = 2;
  TensorDesc x;
  ASSERT_TRUE(TensorDesc::contiguous(x, CONVJIT_DTYPE_F32, {1, 1, 8, 8}).is_ok());
  std::int64_t y_dims[4];
  expect_error(pool_output_dims(p, x, false, y_dims), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"dilation[1] = 2: dilation is supported for max pooling only"});
}

TEST(Validation, ApiLevelMistakes) {
  ConvSetup rank;
  rank.x.rank = 6;
  expect_error(rank.forward(), CONVJIT_STATUS_INVALID_ARGUMENT, {"x rank = 6 must be 3, 4 or 5"});
  ConvSetup spatial;
  spatial.params.spatial_dims = 3;
  expect_error(spatial.forward(), CONVJIT_STATUS_INVALID_ARGUMENT,
               {"params.spatial_dims = 3 but x has rank 4"});
  ConvSetup s;
  expect_error(conv_forward(s.params, s.x, nullptr, s.w, s.buffer.data(), s.y, s.buffer.data()),
               CONVJIT_STATUS_INVALID_ARGUMENT, {"x is NULL"});
  expect_error(conv_backward(s.params, s.x, s.buffer.data(), s.w, s.buffer.data(), s.y,
                             s.buffer.data(), 0x10, nullptr, nullptr, nullptr),
               CONVJIT_STATUS_INVALID_ARGUMENT, {"grad_mask = 0x10"});
}

TEST(Validation, RejectedCallsLeaveTheOutputUntouched) {
  ConvSetup s;
  s.params.groups = 3;
  ASSERT_FALSE(s.forward().is_ok());
  for (std::size_t i = 2048; i < s.buffer.size(); ++i) ASSERT_EQ(s.buffer[i], 42.0f);
}

}  // namespace
}  // namespace convjit::test
