// The implicit-GEMM conv templates (kernel_templates/gemm, conv/*_gemm.cuh)
// in the host emulator, every variant the JIT offers in every direction
// (fwd, bwddata by stride phase, bwdfilt with split reductions) against
// the host reference: tensor-core tiles in f16, bf16 and TF32, SIMT tiles in f32,
// on random problems chosen to exercise the GEMM's edges (channel counts
// on and off the 16-byte chunk, filter counts on and off the tile,
// groups, strides 1-3, dilation, asymmetric padding, 1D/2D/3D, NCHW, NHWC
// and halo layouts, KCRS and KRSC filters), and the model layers.
// Outputs start poisoned, and the emulator fails a launch on any stray
// access, race or unlanded cp.async.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>

#include "dispatcher/backends/emulator/emulator_backend.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/jit/wgmma_conv.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/tolerance.hpp"
#include "dispatcher/settings.hpp"
#include "support/emulated_variant.hpp"
#include "support/host_device.hpp"
#include "support/jit_problem_set.hpp"
#include "support/reduced_run.hpp"
#include "support/reference_comparison.hpp"
#include "support/shifted_buffer.hpp"
#include "support/threads_store_scope.hpp"

namespace convjit {
namespace {

using test::kHost;

constexpr Direction kConvDirections[] = {Direction::fwd, Direction::bwddata, Direction::bwdfilt};

using test::variant_tolerance;

// A conv whose GEMM crosses the tiles' edges: channels per group on and
// off the 16-byte chunk (8 16-bit or 4 f32 elements), filters per group
// below, at and past a tile's width.
test::ConvCase random_gemm_case(std::mt19937& rng, int spatial) {
  auto pick = [&](std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
  auto one_of = [&](std::initializer_list<std::int64_t> v) {
    return *(v.begin() + pick(0, static_cast<std::int64_t>(v.size()) - 1));
  };
  test::ConvCase c;
  c.groups = one_of({1, 1, 1, 2, 3});
  c.channels = c.groups * one_of({3, 4, 5, 8, 12, 16, 24});
  c.filters = c.groups * one_of({5, 8, 16, 24, 33, 40});
  c.batch = pick(1, 2);
  test::randomize_windows(c, rng, spatial, spatial == 3 ? 5 : (spatial == 2 ? 9 : 24));
  return c;
}

// A batch-2 2D conv in channels-last layouts with KRSC filters.
test::ConvCase channels_last_case(std::int64_t groups, std::int64_t channels, std::int64_t filters,
                                  std::vector<std::int64_t> kernel,
                                  std::vector<std::int64_t> dilation,
                                  std::vector<std::int64_t> stride, std::vector<std::int64_t> input,
                                  std::vector<std::int64_t> pad_begin,
                                  std::vector<std::int64_t> pad_end) {
  test::ConvCase c;
  c.groups = groups, c.channels = channels, c.filters = filters, c.batch = 2;
  c.kernel = std::move(kernel), c.dilation = std::move(dilation), c.stride = std::move(stride);
  c.input = std::move(input), c.pad_begin = std::move(pad_begin), c.pad_end = std::move(pad_end);
  c.layout = test::TestLayout::nhwc, c.filter_layout = test::TestLayout::nhwc;
  return c;
}

using test::descriptor;

class EmulatedGemm : public ::testing::Test {
 protected:
  // TF32 on: f32 is then offered the tensor-core tiles as well as the SIMT ones.
  EmulatedGemm() { SettingsStore::instance().set_allow_tf32(true); }
  ~EmulatedGemm() override { SettingsStore::instance().set_allow_tf32(std::nullopt); }

  // Runs every variant on the same operands; returns the ids run.
  // `misaligned`: every operand one element past a 16-byte boundary (a
  // view into a larger tensor), which the vector loads must not take.
  // `already_ran`: of the variants in it, runs only the Hopper conv's lead
  // and every third, from the `rotation`th on; `offered` gets every id
  // offered.
  std::set<std::string> check_every_variant(const OpDescriptor& d, std::mt19937& rng,
                                            double alpha = 1.0, double beta = 0.0,
                                            bool misaligned = false,
                                            const std::set<std::string>* already_ran = nullptr,
                                            std::size_t rotation = 0,
                                            std::set<std::string>* offered = nullptr) {
    BuildTrace trace;
    auto variants = backend_.build_variants(d, kHost, trace);
    EXPECT_TRUE(variants.is_ok()) << variants.status().message();
    if (!variants.is_ok()) return {};
    if (offered != nullptr)
      for (const KernelVariant& v : variants.value()) offered->insert(v.id);
    const std::string_view lead = wgmma_lead_config(d).id;
    if (already_ran != nullptr) keep_in_turn(variants.value(), *already_ran, rotation, lead);
    const test::HostOperands host = test::random_operands(d, rng, alpha, beta);
    const std::size_t shift = misaligned ? element_size(d.dtype) : 0;
    const test::ShiftedBuffer x(host.x, shift), w(host.w, shift), dy(host.dy, shift);
    std::set<std::string> ran;
    for (const KernelVariant& v : variants.value()) {
      if (v.id != lead && run_once_.contains(v.id) && !ran_once_.insert(v.id).second) continue;
      SCOPED_TRACE("variant " + v.id);
      test::ShiftedBuffer out(host.out, shift);
      ExecArgs args = host.args(d, out.data());
      if (args.x != nullptr) args.x = x.data();
      if (args.w != nullptr) args.w = w.data();
      if (args.dy != nullptr) args.dy = dy.data();
      // A kernel that stores y by TMA serves beta 0 alone: it refuses, and
      // the variant blends on the threads' store.
      const Kernel* kernel = v.kernel.get();
      std::unique_ptr<Kernel> blending;
      if (beta != 0.0 && test::stores_by_tma(d, v.id)) {
        const Status refused = kernel->execute(args);
        EXPECT_EQ(refused.code(), CONVJIT_STATUS_UNSUPPORTED) << refused.message();
        const test::ThreadsStoreScope threads;
        auto built = backend_.build_variant(d, kHost, v.id, trace);
        EXPECT_TRUE(built.is_ok()) << built.status().message();
        if (!built.is_ok()) continue;
        blending = std::move(built).value();
        kernel = blending.get();
      }
      const Status s = kernel->execute(args);
      if (misaligned && find_wgmma_config(v.id) != nullptr) {  // TMA takes 16-byte aligned only
        EXPECT_NE(s.message().find("must be 16-byte aligned"), std::string::npos) << s.message();
        continue;
      }
      EXPECT_TRUE(s.is_ok()) << s.message();
      if (!s.is_ok()) continue;
      test::expect_matches_reference(d, host, out.bytes(), variant_tolerance(d, v.id));
      ran.insert(v.id);
    }
    return ran;
  }

  EmulatorBackend backend_;
  // Variants that run on the first op offering them only (ran_once_), but
  // where they are the Hopper conv's lead (wgmma_lead_config).
  std::set<std::string> run_once_, ran_once_;

 private:
  static void keep_in_turn(std::vector<KernelVariant>& variants, const std::set<std::string>& ran,
                           std::size_t rotation, std::string_view lead) {
    std::vector<KernelVariant> kept;
    for (std::size_t i = 0; i < variants.size(); ++i)
      if (!ran.contains(variants[i].id) || variants[i].id == lead || (i + rotation) % 3 == 0)
        kept.push_back(std::move(variants[i]));
    variants = std::move(kept);
  }
};

TEST_F(EmulatedGemm, EveryDirectionOffersEveryTileAndMath) {
  std::mt19937 rng(18);
  const test::ConvCase c = random_gemm_case(rng, 2);
  std::set<std::string> want{"direct"};
  for (const GemmTile& t : gemm_tiles()) want.insert(std::string(t.id));
  for (Direction direction : kConvDirections) {
    std::set<std::string> all;
    for (DataType dtype : {DataType::f32, DataType::f16})
      for (const std::string& id : jit_variants(descriptor(c, dtype, direction), {"", true}))
        all.insert(id);
    EXPECT_EQ(all, want) << direction_name(direction);
  }
}

class EmulatedGemmDirection : public EmulatedGemm,
                              public ::testing::WithParamInterface<Direction> {};

TEST_P(EmulatedGemmDirection, RandomConvolutionsInEveryVariant) {
  std::mt19937 rng(1818 + static_cast<int>(GetParam()));
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16})
    for (int i = 0; i < 12; ++i) {
      const test::ConvCase c = random_gemm_case(rng, 1 + i % 3);
      SCOPED_TRACE(c.describe());
      check_every_variant(descriptor(c, dtype, GetParam()), rng);
    }
}

TEST_P(EmulatedGemmDirection, AlphaAndBetaBlendInEveryVariant) {
  std::mt19937 rng(1819);
  for (DataType dtype : {DataType::f32, DataType::bf16}) {
    const test::ConvCase c = random_gemm_case(rng, 2);
    SCOPED_TRACE(c.describe());
    check_every_variant(descriptor(c, dtype, GetParam()), rng, 0.5, 0.25);
  }
}

// Views into larger tensors: every operand one element off a 16-byte
// boundary, in layouts whose strides would otherwise take 16-byte loads
// (channels-last, channels per group a multiple of 8), so every loader's
// gathering path runs.
TEST_P(EmulatedGemmDirection, MisalignedOperandsGatherInEveryVariant) {
  std::mt19937 rng(1823);
  const test::ConvCase c =
      channels_last_case(1, 16, 24, {3, 3}, {1, 1}, {2, 1}, {7, 6}, {1, 1}, {1, 1});
  for (DataType dtype : {DataType::f32, DataType::f16}) {
    SCOPED_TRACE(c.describe());
    check_every_variant(descriptor(c, dtype, GetParam()), rng, 1.0, 0.0, true);
  }
}

// Strides 2 and 3 with dilation: phases that no tap reaches (their inputs
// get alpha 0 + beta dx), phases with uneven input counts, and a stride
// past the input.
TEST_F(EmulatedGemm, BackwardDataCoversEveryStridePhase) {
  std::mt19937 rng(1821);
  const test::ConvCase c =
      channels_last_case(1, 16, 24, {1, 3}, {1, 2}, {3, 2}, {7, 11}, {0, 2}, {0, 1});
  for (DataType dtype : {DataType::f32, DataType::bf16}) {
    SCOPED_TRACE(c.describe());
    EXPECT_EQ(check_every_variant(descriptor(c, dtype, Direction::bwddata), rng, 1.0, 0.5).size(),
              jit_variants(descriptor(c, dtype, Direction::bwddata), {"", true}).size());
  }
}

// A long reduction over few weights: the blocks split it, and the second
// pass adds their partial sums.
TEST_F(EmulatedGemm, BackwardFilterSplitsLongReductions) {
  std::mt19937 rng(1822);
  const test::ConvCase c =
      channels_last_case(2, 16, 16, {3, 3}, {1, 1}, {1, 1}, {24, 24}, {1, 1}, {1, 1});
  for (DataType dtype : {DataType::f32, DataType::f16}) {
    const OpDescriptor d = descriptor(c, dtype, Direction::bwdfilt);
    auto source = kernel_source(d, "tc64x64");
    ASSERT_TRUE(source.is_ok()) << source.status().message();
    ASSERT_EQ(source.value().entries.size(), 2u) << "the reduction is not split";
    check_every_variant(d, rng, 0.5, 0.25);
  }
}

// Channels-last activations with LBANN's contiguous K C R S filters: the
// fwd and bwddata GEMMs read a packed copy of w, written by a first pass
// into the workspace.  fwd reads K R S C filters as they are, and a copy
// whose rows would not load in chunks either is not made.  In two groups
// a bwddata's copy gathers; in one it goes by tiles (conv/
// packed_filters.cuh), as a fwd's does in either.
TEST_F(EmulatedGemm, FiltersArePackedWhereTheirOwnLayoutCannotLoadInChunks) {
  std::mt19937 rng(1824);
  const auto packed_bytes = [](const OpDescriptor& d) -> std::size_t {
    auto source = kernel_source(d, "tc64x64");
    EXPECT_TRUE(source.is_ok()) << source.status().message();
    if (!source.is_ok()) return 0;
    const auto& entries = source.value().entries;
    const bool first_pass = entries.front().name == "convjit_kernel_prepare";
    EXPECT_EQ(first_pass, source.value().workspace_bytes > 0);
    return first_pass ? source.value().workspace_bytes : 0;
  };
  test::ConvCase c = channels_last_case(2, 32, 48, {3, 3}, {1, 1}, {2, 2}, {9, 8}, {1, 1}, {1, 0});
  for (const std::int64_t groups : {2, 1})
    for (DataType dtype : {DataType::f32, DataType::bf16})
      for (Direction direction : {Direction::fwd, Direction::bwddata}) {
        c.groups = groups;
        SCOPED_TRACE(
            fmt::format("{} groups {} {}", dtype_name(dtype), groups, direction_name(direction)));
        c.filter_layout = test::TestLayout::nchw;
        OpDescriptor d = descriptor(c, dtype, direction);
        EXPECT_EQ(packed_bytes(d),
                  48u * 32 / static_cast<std::size_t>(groups) * 9 * element_size(dtype));
        check_every_variant(d, rng, 1.0, 0.5);
        c.filter_layout = test::TestLayout::nhwc;
        d = descriptor(c, dtype, direction);
        EXPECT_EQ(packed_bytes(d) > 0, direction == Direction::bwddata);
        check_every_variant(d, rng);
      }
  // 3 channels by 3 x 3 taps: rows of 27 elements, no whole chunks.
  c = channels_last_case(1, 3, 16, {3, 3}, {1, 1}, {1, 1}, {6, 6}, {1, 1}, {1, 1});
  c.filter_layout = test::TestLayout::nchw;
  EXPECT_EQ(packed_bytes(descriptor(c, DataType::f16, Direction::fwd)), 0u);
}

INSTANTIATE_TEST_SUITE_P(Conv, EmulatedGemmDirection, ::testing::ValuesIn(kConvDirections),
                         [](const auto& p) { return std::string(direction_name(p.param)); });

// The models of the sweep below, in the layouts and dtypes they train in,
// at batch 1 and small images.
struct SweptModel {
  const char* name;
  ModelOptions options;
};
constexpr SweptModel kSweptModels[] = {{"resnet50", {1, 32, true, DataType::bf16}},
                                       {"yolo11n", {1, 64, true, DataType::f16}},
                                       {"cosmoflow", {1, 32, false, DataType::f32}}};

// One test per direction and model, so that ctest spreads them over the
// cores and each stays well within its time limit.
class EmulatedModelLayers
    : public EmulatedGemm,
      public ::testing::WithParamInterface<std::tuple<Direction, SweptModel>> {};

// Every distinct conv of a model in one direction.  A layer runs the
// variants no earlier layer ran, the Hopper conv's lead there, and a third
// of the rest in turn: every variant runs on the first layer that offers
// it and on a third of the others, the lead on all of them.  All variants
// on every layer took 10 minutes of CI's 2 cores; the random convs of
// EmulatedGemmDirection and EmulatedWgmmaConv run every variant on each.
TEST_P(EmulatedModelLayers, EveryModelLayerInEveryThirdVariant) {
  const auto& [direction, model] = GetParam();
  std::mt19937 rng(1820);
  std::set<std::string> ran, offered;
  std::size_t layers = 0;
  // The Hopper conv's configurations run one code with other Problem
  // constants: each layer runs the one the auto policy leads with there,
  // the others once (EmulatedWgmmaConv has them all on random convs),
  // which keeps this test within its time limit.
  for (const WgmmaConvConfig& config : kWgmmaConfigs) run_once_.emplace(config.id);
  for (const OpDescriptor& d : test::sweep(test::model_descriptors(model.name, model.options))) {
    if (d.kind != OpKind::conv || d.direction != direction) continue;
    SCOPED_TRACE(descriptor_name(d));
    ran.merge(check_every_variant(d, rng, 1.0, 0.0, false, &ran, layers, &offered));
    ++layers;
  }
  EXPECT_GE(layers, test::reduced_run() ? 1u : 4u);  // CosmoFlow's fewest: its 4 bwddata convs
  EXPECT_EQ(ran, offered);
}

INSTANTIATE_TEST_SUITE_P(Sweep, EmulatedModelLayers,
                         ::testing::Combine(::testing::ValuesIn(kConvDirections),
                                            ::testing::ValuesIn(kSweptModels)),
                         [](const auto& p) {
                           return std::string(direction_name(std::get<0>(p.param))) + "_" +
                                  std::get<1>(p.param).name;
                         });

}  // namespace
}  // namespace convjit
