// The emulator's TMA (common/tma.cuh): tensor maps refused as the driver
// refuses them; the swizzles against the PTX ISA's tables; every tiled and
// im2col mode of tests/emulator_templates/tma.cuh against the results
// worked in support/tma_cases.hpp, with hand-checked elements; the store;
// and each planted bug reported with a clear message.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "dispatcher/backends/emulator/bulk_tensor_box.hpp"
#include "dispatcher/tensor_maps/tensor_map_encoder.hpp"
#include "support/tma_cases.hpp"

namespace convjit::emulator {
namespace {

using ::testing::HasSubstr;

// ---- tensor maps: the driver's rules ------------------------------------------

TensorMapSpec valid_map() {
  static const float storage[64] alignas(16) = {};
  TensorMapSpec s = test::tma_tiled({40, 20}, {8, 16});
  s.global_address = storage;
  return s;
}

void expect_refused(const TensorMapSpec& s, const std::string& what) {
  const Status status = validate_tensor_map(s);
  EXPECT_EQ(status.code(), CONVJIT_STATUS_INVALID_ARGUMENT) << what;
  EXPECT_THAT(status.message(), HasSubstr(what));
}

TEST(TensorMapSpec, TheDriversRulesAreAppliedWithTheFieldNamed) {
  ASSERT_TRUE(validate_tensor_map(valid_map()).is_ok());
  TensorMapSpec s = valid_map();
  s.global_address = static_cast<const char*>(s.global_address) + 4;
  expect_refused(s, "global_address");
  s = valid_map();
  s.strides[0] = 40;
  expect_refused(s, "the stride of dimension 1 is 40 bytes: it must be a multiple of 16");
  s = valid_map();
  s.box[1] = 257;
  expect_refused(s, "box[1] = 257 must be 1 to 256");
  s = valid_map();
  s.box[0] = 6;  // 24 bytes
  expect_refused(s, "(24 bytes) must be a multiple of 16 bytes");
  s = valid_map();
  s.box[0] = 16, s.swizzle = TensorMapSwizzle::b32;  // 64 bytes
  expect_refused(s, "exceeds the 32-byte swizzle");
  s = valid_map();
  s.element_strides[1] = 9;
  expect_refused(s, "element_strides[1] = 9 must be 1 to 8");
  s = valid_map();
  s.rank = 6;
  expect_refused(s, "rank 6 is outside 1 to 5");
  s = valid_map();
  s.dims[1] = 0;
  expect_refused(s, "dims[1] = 0 must be 1 to 2^32");
}

TEST(TensorMapSpec, Im2colMapsFollowTheirOwnRules) {
  TensorMapSpec s = test::tma_case_map(5);
  s.global_address = valid_map().global_address;
  ASSERT_TRUE(validate_tensor_map(s).is_ok()) << validate_tensor_map(s).message();
  EXPECT_EQ(box_bytes(s), 16u * 8u * 4u);
  TensorMapSpec t = s;
  t.lower_corner[1] = -129;  // rank 4: 8-bit corners
  expect_refused(t, "lower_corner[1] = -129 must be within [-128, 127] for rank 4");
  t = s;
  t.upper_corner[0] = -6;  // W = 5 and lower -1: anchors [-1, -2], none
  expect_refused(t, "the bounding box of spatial dimension 0 is empty");
  t = s;
  t.pixels_per_column = 1025;
  expect_refused(t, "pixels_per_column = 1025 must be 1 to 1024");
  t = s;
  t.rank = 2;
  expect_refused(t, "rank 2 is outside 3 to 5");
}

// ---- the swizzles (PTX ISA, "Tensor Swizzling Modes") ---------------------------

TEST(TensorMapArgument, EachMapBindsItsOperandPlusTheOffset) {
  std::byte in0[64], in1[64], out[64], workspace[64];
  const TensorMapOperands operands{in0, in1, out, workspace};
  using Operand = TensorMapArgument::Operand;
  const std::pair<Operand, const std::byte*> cases[] = {{Operand::in0, in0},
                                                        {Operand::in1, in1},
                                                        {Operand::out, out},
                                                        {Operand::workspace, workspace}};
  for (const auto& [operand, base] : cases) {
    const TensorMapArgument argument{test::tma_tiled({40, 20}, {8, 16}), operand, 32};
    EXPECT_EQ(bound_spec(argument, operands).global_address, base + 32);
    EXPECT_EQ(bound_spec(argument, operands).box[1], 16u);  // the rest is the source's
  }
  const TensorMapArgument on_workspace{test::tma_tiled({40, 20}, {8, 16}), Operand::workspace, 32};
  EXPECT_EQ(bound_spec(on_workspace, {in0, in1, out, nullptr}).global_address, nullptr);
}

// The JIT's launch encodes its maps this way; a bad one is named before the
// driver is asked (so on a machine with a driver or without).
TEST(TensorMapArgument, ALaunchsMapsAreEncodedInOrderAndABadOneIsNamed) {
  alignas(256) std::byte buffer[3200];
  TensorMapArgument bad{test::tma_tiled({40, 20}, {8, 16}), TensorMapArgument::Operand::in1, 0};
  bad.spec.strides[0] = 20;
  const TensorMapArgument arguments[] = {test::tma_over_input(test::tma_tiled({40, 20}, {8, 16})),
                                         bad};
  auto encoded = encode_tensor_maps(CudaDriver::instance(), arguments,
                                    {buffer, buffer, buffer, nullptr});
  ASSERT_FALSE(encoded.is_ok());
  EXPECT_THAT(encoded.status().message(), HasSubstr("tensor map 1 (over the kernel's in1): "));
  const std::vector<TensorMapArgument> too_many(kMaxTensorMaps + 1, arguments[0]);
  encoded = encode_tensor_maps(CudaDriver::instance(), too_many, {buffer, buffer, buffer, nullptr});
  ASSERT_FALSE(encoded.is_ok());
  EXPECT_THAT(encoded.status().message(), HasSubstr("5 tensor maps; a kernel takes at most 4"));
}

TEST(TmaSwizzle, SixteenByteChunksAreXoredWithTheRowWithinTheRepeat) {
  // 128B: row r of 128 bytes has its chunk k at k ^ (r % 8).
  EXPECT_EQ(swizzled_offset(0x000, TensorMapSwizzle::b128), 0x000u);
  EXPECT_EQ(swizzled_offset(0x080, TensorMapSwizzle::b128), 0x090u);          // row 1, chunk 0 -> 1
  EXPECT_EQ(swizzled_offset(0x3f4, TensorMapSwizzle::b128), 0x384u);          // row 7, chunk 7 -> 0
  EXPECT_EQ(swizzled_offset(0x400 + 0x0a0, TensorMapSwizzle::b128), 0x4b0u);  // repeats at 1024
  // 64B: chunks 0-3 of each 64 bytes, XORed with bits 7-8.
  EXPECT_EQ(swizzled_offset(0x180, TensorMapSwizzle::b64), 0x1b0u);  // row 3: chunk 0 -> 3
  EXPECT_EQ(swizzled_offset(0x1c0, TensorMapSwizzle::b64), 0x1f0u);  // 64 bytes on: same row bits
  // 32B: bit 4 flips on odd 128-byte rows.
  EXPECT_EQ(swizzled_offset(0x090, TensorMapSwizzle::b32), 0x080u);
  EXPECT_EQ(swizzled_offset(0x110, TensorMapSwizzle::b32), 0x110u);
  EXPECT_EQ(swizzle_repeat(TensorMapSwizzle::b128), 1024u);
  EXPECT_EQ(swizzle_repeat(TensorMapSwizzle::b32), 256u);
}

// ---- the test template ------------------------------------------------------------

test::TemplateRun run_case(const test::TmaCase& k) {
  test::EmulatedRunOptions options;
  options.tensor_maps = k.maps;
  return test::run_emulated("tma.cuh", k.mode, k.input, k.output_size, k.threads,
                            std::move(options));
}

TEST(EmulatorTma, EveryTiledAndIm2colModeLandsTheBoxTheIsaDefines) {
  for (long long mode : test::kTmaWorkingModes) {
    const test::TmaCase k = test::tma_case(mode);
    const test::TemplateRun run = run_case(k);
    ASSERT_TRUE(run.status.is_ok()) << "mode " << mode << ": " << run.status.message();
    ASSERT_EQ(run.output.size(), k.expected.size());
    for (std::size_t i = 0; i < k.expected.size(); ++i)
      ASSERT_EQ(run.output[i], k.expected[i]) << "mode " << mode << ", element " << i;
  }
}

// Elements worked by hand, so that the cases' own walk is checked too.
TEST(EmulatorTma, HandCheckedElements) {
  // Mode 0, block 1: the box at (-4, -5); its element (4, 5) is the
  // tensor's first, its row 5 starts 4 elements before the tensor's.
  const test::TemplateRun tile = run_case(test::tma_case(0));
  ASSERT_TRUE(tile.status.is_ok()) << tile.status.message();
  EXPECT_EQ(tile.output[128 + 5 * 8 + 4], 1.0f);
  EXPECT_EQ(tile.output[128 + 5 * 8 + 3], 0.0f);
  EXPECT_EQ(tile.output[128 + 4 * 8 + 4], 0.0f);
  EXPECT_EQ(tile.output[128 + 6 * 8 + 7], 44.0f);  // (3, 1): 1 + 40 + 3
  // Mode 5: anchors W in [-1, 3] and H in [0, 1], 10 pixels an image;
  // pixel strides are 8 floats (W), 40 (H), 160 (N).  Block 0 starts at
  // (w -1, h 0): pixel 0 is padding, pixel 1 the first pixel (1..8),
  // pixel 6 (w 0, h 1) element 40, pixel 11 (w 0, h 0) of image 1.
  const test::TemplateRun im2col = run_case(test::tma_case(5));
  ASSERT_TRUE(im2col.status.is_ok()) << im2col.status.message();
  for (int ch = 0; ch < 8; ++ch) {
    EXPECT_EQ(im2col.output[ch], 0.0f);
    EXPECT_EQ(im2col.output[8 + ch], static_cast<float>(1 + ch));
  }
  EXPECT_EQ(im2col.output[6 * 8], 41.0f);
  EXPECT_EQ(im2col.output[11 * 8], 161.0f);
  // Block 2 starts at (w 3, h 1), the last anchor, with the tap (1, 2):
  // pixel 0 reads (4, 3), element 120 + 32; pixel 1 wraps to image 1's
  // first anchor (-1, 0), plus the tap: (0, 2), element 160 + 80.
  EXPECT_EQ(im2col.output[256], 153.0f);
  EXPECT_EQ(im2col.output[256 + 8], 241.0f);
}

TEST(EmulatorTma, AStoreWritesTheBoxAndCutsTheTensorsEdges) {
  const test::TmaCase k = test::tma_case(7);
  const test::TemplateRun run = run_case(k);
  ASSERT_TRUE(run.status.is_ok()) << run.status.message();
  EXPECT_EQ(run.output, k.expected);
}

void expect_tma_reported(long long mode, const std::string& what) {
  const test::TemplateRun run = run_case(test::tma_case(mode));
  EXPECT_EQ(run.status.code(), CONVJIT_STATUS_EXECUTION_FAILED) << "mode " << mode;
  EXPECT_THAT(run.status.message(), HasSubstr(what)) << "mode " << mode;
}

TEST(EmulatorTma, PlantedBugsAreReported) {
  expect_tma_reported(8, "shared box[4] is byte 16 of the array, not 128-byte aligned");
  expect_tma_reported(9,
                      "while the TMA load thread 0 issued to it is in flight: wait for the phase");
  expect_tma_reported(10, "reads x[");
  expect_tma_reported(11, "no fence.proxy.async.shared::cta after it");
  expect_tma_reported(12, "16 transaction bytes completed beyond those expected");
  expect_tma_reported(13, "shared loose is declared 16-byte aligned; a TMA copy needs 128 (1024");
  expect_tma_reported(14, "while thread 0's TMA store still reads it");
  expect_tma_reported(15,
                      "the filter base's coordinate 1 (4) lies outside the bounding box [-1, 3]");
  expect_tma_reported(20,
                      "its innermost coordinate -3 is -12 bytes into dimension 0, not a multiple "
                      "of 16: the GPU stops with an illegal instruction");
}

TEST(EmulatorTma, AnInvalidMapFailsTheLaunchAsTheDriverWould) {
  test::TmaCase k = test::tma_case(0);
  k.maps[0].spec.strides[0] = 20;
  const test::TemplateRun run = run_case(k);
  EXPECT_EQ(run.status.code(), CONVJIT_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(run.status.message(),
              HasSubstr("tensor map 0 (over the kernel's in0): tensor map (cuTensorMapEncodeTiled)"));
}

}  // namespace
}  // namespace convjit::emulator
