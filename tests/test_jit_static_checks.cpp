// Static checks of the implicit-GEMM variants, no GPU needed: for the
// representative layers (ResNet-50's 3x3 and 1x1 convs, YOLO11n's dense
// convs at C = 16 ... 256, CosmoFlow's 3D convs), in channels-last bf16
// at batch 32, every tensor-core variant's sm_80 and sm_90 build
//   - uses the instructions it was designed around (mma.sync, ldmatrix,
//     cp.async in its PTX),
//   - spills nothing (ptxas -v),
//   - fits an SM: its 256 threads' registers within the 64 Ki register
//     file, its static shared memory the tile's stages within 48 KiB.
// Strict f32 gets the same for its SIMT tiles (FMAs, cp.async, no mma)
// and, with TF32 allowed, its tensor-core tiles (mma.sync ... tf32).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "analysis/entry_resources.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/jit/nvrtc_compiler.hpp"
#include "dispatcher/backends/jit/pixel_filters.hpp"
#include "dispatcher/backends/jit/tap_fold.hpp"
#include "dispatcher/backends/jit/wgmma_conv.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/models/model_table.hpp"
#include "dispatcher/settings.hpp"
#include "kernel_templates/conv/pixel_filters_shape.cuh"
#include "tests/support/threads_store_scope.hpp"

namespace convjit {
namespace {

constexpr int kRegisterFile = 64 * 1024;  // 32-bit registers per SM, sm_80 and sm_90
constexpr long long kStaticShared = 48 * 1024;

// The layers, by a name saying why each is here; `strided`: ResNet-50's
// first strided 3x3 and 1x1 convs too, and in fwd and bwdfilt its stem
// (3 channels, 7 x 7 /2), which the Hopper conv serves with its taps
// folded.
std::map<std::string, OpDescriptor> representative_layers(DataType dtype,
                                                          Direction direction = Direction::fwd,
                                                          bool strided = false,
                                                          bool krsc_filters = false) {
  std::map<std::string, OpDescriptor> layers;
  const auto at = [&](std::int64_t image_size) {
    return ModelOptions{.batch = 32,
                        .image_size = image_size,
                        .channels_last = true,
                        .dtype = dtype,
                        .krsc_filters = krsc_filters};
  };
  const std::pair<const char*, ModelOptions> models[] = {
      {"resnet50", at(224)}, {"yolo11n", at(640)}, {"cosmoflow", at(128)}};
  for (const auto& [model, options] : models) {
    auto ops = expand_model(*find_model(model), options);
    EXPECT_TRUE(ops.is_ok()) << ops.status().message();
    for (const ModelOp& op : ops.value()) {
      const OpDescriptor& d = op.desc;
      if (d.kind != OpKind::conv || d.direction != direction || d.w_dims[1] == 1) continue;
      const long long cg = d.w_dims[1], r = d.w_dims[2];
      std::string key;
      const bool downsampling = d.stride[0] > 1;
      if (std::string(model) == "resnet50" && cg == 3 && strided && direction != Direction::bwddata)
        key = "resnet50 7x7 /2 stem";
      else if (std::string(model) == "resnet50" && (r == 3 || r == 1) && cg >= 64 &&
               (strided || !downsampling))
        key = fmt::format("resnet50 {}x{}{}", r, r, downsampling ? " /2" : "");
      else if (std::string(model) == "yolo11n" &&
               (cg >= 16 || (cg == 8 && direction == Direction::bwdfilt)) && cg <= 256)
        key = fmt::format("yolo11n C={}", cg);
      else if (std::string(model) == "cosmoflow" && d.spatial_dims == 3 && cg > 4)
        key = fmt::format("cosmoflow 3D {}x{}x{} C={}", r, r, r, cg);
      if (!key.empty()) layers.emplace(key, d);
    }
  }
  return layers;
}

// The most threads any of a module's entries launches a block with, which
// the register file must hold at the module's most registers a thread.
long long widest_block(const KernelSource& source) {
  unsigned widest = 0;
  for (const KernelEntry& e : source.entries) widest = std::max(widest, e.threads_per_block);
  return widest;
}

struct Expected {
  std::vector<std::string> instructions;
  bool mma;
};

// An entry's own static shared memory, as ptxas reports it: the module's
// other entries declare theirs apart (the filters' copy its tile), where
// CompiledModule::stats holds the module's most.
long long entry_shared_bytes(const CompiledModule& m, std::string_view entry) {
  for (const analysis::EntryResources& e : analysis::parse_entry_resources(m.log))
    if (e.name == entry) return e.shared_bytes;
  ADD_FAILURE() << "no ptxas line for " << entry << " in\n" << m.log;
  return 0;
}

void check_variant(const std::string& layer, const OpDescriptor& d, const GemmTile& tile,
                   const char* arch, const Expected& expected) {
  SCOPED_TRACE(fmt::format("{} {} ({}), {} for {}", layer, direction_name(d.direction),
                           descriptor_name(d), tile.id, arch));
  auto source = kernel_source(d, tile.id);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  auto module = compile_kernel(source.value(), arch);
  ASSERT_TRUE(module.is_ok()) << module.status().message();
  const CompiledModule& m = module.value();
  for (const std::string& instruction : expected.instructions)
    EXPECT_NE(m.ptx.find(instruction), std::string::npos) << "no " << instruction << " in the PTX";
  if (!expected.mma) {
    EXPECT_EQ(m.ptx.find("mma.sync"), std::string::npos);
  }
  EXPECT_EQ(m.stats.spill_stores + m.stats.spill_loads, 0) << m.log;
  EXPECT_GT(m.stats.max_registers, 0) << m.log;
  EXPECT_LE(m.stats.max_registers * kJitThreadsPerBlock, kRegisterFile) << m.log;
  const long long shared = entry_shared_bytes(m, "convjit_kernel");
  EXPECT_EQ(shared, static_cast<long long>(tile.bm + tile.bn) * 64 * tile.stages) << m.log;
  EXPECT_LE(m.stats.shared_bytes, kStaticShared);  // every entry's
  std::printf("  %-24s %-7s %-10s %s: %3d registers, %5lld bytes shared, %.0f ms\n", layer.c_str(),
              std::string(direction_name(d.direction)).c_str(), std::string(tile.id).c_str(), arch,
              m.stats.max_registers, shared, m.compile_ms);
}

TEST(JitStaticChecks, EveryTensorCoreVariantUsesItsInstructionsFitsAndDoesNotSpill) {
  const auto layers = representative_layers(DataType::bf16);
  ASSERT_GE(layers.size(), 8u);  // 2 ResNet-50, 5 YOLO11n, CosmoFlow
  const Expected expected{{"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                           "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "cp.async.cg.shared.global",
                           "cp.async.wait_group"},
                          true};
  for (const auto& [layer, d] : layers)
    for (const GemmTile& tile : gemm_tiles())
      if (tile.math == GemmMath::tensor_core)
        for (const char* arch : {"sm_80", "sm_90"}) check_variant(layer, d, tile, arch, expected);
}

// The backward GEMMs on ResNet-50's 3x3 and 1x1 and a CosmoFlow layer.
// bwddata's A (dy, filters contiguous) fills by cp.async, and so does its
// B from the filters' copy that a first pass packs; bwdfilt reduces
// over pixels, which channels-last layouts stride apart, so its tiles
// are stored filter- and channel-major (16-byte chunks along M and N),
// filled by cp.async and read by ldmatrix.trans.
TEST(JitStaticChecks, TheBackwardVariantsUseTheirInstructionsFitAndDoNotSpill) {
  const Expected bwddata{{"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                          "ldmatrix.sync.aligned.m8n8.x4.shared.b16", "cp.async.cg.shared.global",
                          "cp.async.wait_group", ".entry convjit_kernel_prepare"},
                         true};
  const Expected bwdfilt{{"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
                          "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                          "cp.async.cg.shared.global", "cp.async.wait_group"},
                         true};
  int checked = 0;
  for (Direction direction : {Direction::bwddata, Direction::bwdfilt})
    for (const auto& [layer, d] : representative_layers(DataType::bf16, direction)) {
      if (!layer.starts_with("resnet50") && layer != "cosmoflow 3D 3x3x3 C=64") continue;
      for (const GemmTile& tile : gemm_tiles())
        if (tile.math == GemmMath::tensor_core)
          for (const char* arch : {"sm_80", "sm_90"}) {
            check_variant(layer, d, tile, arch,
                          direction == Direction::bwddata ? bwddata : bwdfilt);
            ++checked;
          }
    }
  EXPECT_GE(checked, 2 * 3 * 4 * 2);
}

// A kernel built for bandwidth (the depthwise and pooling variants), the
// heuristic's choice for `d`: it loads its channel vectors as single
// 16-byte accesses (and, `stores`, writes them so), fits and does not spill.
void check_vector_kernel(const ModelOp& op, std::string_view variant, bool stores) {
  const OpDescriptor& d = op.desc;
  SCOPED_TRACE(fmt::format("{} ({})", op.layer, descriptor_name(d)));
  auto source = kernel_source(d);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  ASSERT_EQ(source.value().variant, variant) << "the heuristic's choice";
  for (const char* arch : {"sm_80", "sm_90"}) {
    auto module = compile_kernel(source.value(), arch);
    ASSERT_TRUE(module.is_ok()) << module.status().message();
    const CompiledModule& m = module.value();
    EXPECT_NE(m.ptx.find("ld.global.nc.v4.u32"), std::string::npos) << "no 16-byte load";
    if (stores) {
      EXPECT_NE(m.ptx.find("st.global.v4.u32"), std::string::npos) << "no 16-byte store";
    }
    EXPECT_EQ(m.ptx.find("mma.sync"), std::string::npos);
    EXPECT_EQ(m.stats.spill_stores + m.stats.spill_loads, 0) << m.log;
    EXPECT_LE(m.stats.max_registers * kJitThreadsPerBlock, kRegisterFile) << m.log;
    std::printf("  %-28s %-7s %s: %3d registers, %.0f ms\n", op.layer.c_str(),
                std::string(direction_name(d.direction)).c_str(), arch, m.stats.max_registers,
                m.compile_ms);
  }
}

std::vector<ModelOp> model_ops(const char* model) {
  auto ops = expand_model(*find_model(model), {32, 0, true, DataType::bf16});
  EXPECT_TRUE(ops.is_ok()) << ops.status().message();
  return ops.is_ok() ? ops.value() : std::vector<ModelOp>{};
}

// YOLO11n's depthwise convs in channels-last bf16, in every direction
// (bwdfilt writes f32 partial sums, not vectors).
TEST(JitStaticChecks, TheDepthwiseKernelsMoveChannelsIn16ByteAccesses) {
  int checked = 0;
  for (const ModelOp& op : model_ops("yolo11n"))
    if (is_depthwise(op.desc) && checked < 12) {
      check_vector_kernel(op, kDepthwiseVariant, op.desc.direction != Direction::bwdfilt);
      ++checked;
    }
  EXPECT_EQ(checked, 12);
}

// The heuristic's kernel for `op` is `variant`, a plane-tile kernel: it
// stages its halos in shared memory within a block's 48 KiB, fits an SM
// and does not spill (sm_90).
void check_plane_tile_kernel(const ModelOp& op, std::string_view variant) {
  const OpDescriptor& d = op.desc;
  SCOPED_TRACE(fmt::format("{} ({})", op.layer, descriptor_name(d)));
  auto source = kernel_source(d);
  ASSERT_TRUE(source.is_ok()) << source.status().message();
  ASSERT_EQ(source.value().variant, variant) << "the heuristic's choice";
  auto module = compile_kernel(source.value(), "sm_90");
  ASSERT_TRUE(module.is_ok()) << module.status().message();
  const CompiledModule& m = module.value();
  EXPECT_GT(m.stats.shared_bytes, 0) << m.log;
  EXPECT_LE(m.stats.shared_bytes, kStaticShared) << m.log;
  EXPECT_EQ(m.stats.spill_stores + m.stats.spill_loads, 0) << m.log;
  EXPECT_LE(m.stats.max_registers * kJitThreadsPerBlock, kRegisterFile) << m.log;
  std::printf("  %-28s %-7s sm_90: %3d registers, %5lld bytes shared, %.0f ms\n",
              op.layer.c_str(), std::string(direction_name(d.direction)).c_str(),
              m.stats.max_registers, m.stats.shared_bytes, m.compile_ms);
}

std::vector<ModelOp> nchw_ops(const char* model) {
  auto ops = expand_model(*find_model(model), {32, 0, false, DataType::bf16});
  EXPECT_TRUE(ops.is_ok()) << ops.status().message();
  return ops.is_ok() ? ops.value() : std::vector<ModelOp>{};
}

// YOLO11n's depthwise convs in NCHW bf16, in every direction.
TEST(JitStaticChecks, TheDepthwiseTileKernelsStageTheirHaloInSharedMemory) {
  int checked = 0;
  for (const ModelOp& op : nchw_ops("yolo11n"))
    if (is_depthwise(op.desc) && checked < 9) {
      check_plane_tile_kernel(op, kDepthwiseTileVariant);
      ++checked;
    }
  EXPECT_EQ(checked, 9);
}

// The conv of short reductions over few filters (conv/conv_pixels.cuh)
// on the YOLO11n convs it was written for, channels-last and NCHW bf16,
// for sm_80 and sm_90: the fwd of the stem and of the 3 x 3 convs of 16
// channels to 8 filters and 8 to 16, and the bwddata of those two and of
// b1's of stride 2 (by phases); auto leads with it on three of them.
// Its filters and the tile's input halo in dynamic shared memory within
// its cap (the bwddata of stride 2 takes 91 KiB, opted in), no spills,
// the filters' 16-byte shared reads, and channels-last y written in
// 16-byte stores.

TEST(JitStaticChecks, ThePixelFilterKernelKeepsItsFiltersInSharedMemory) {
  int checked = 0, leads = 0;
  for (const bool channels_last : {true, false}) {
    auto ops = expand_model(*find_model("yolo11n"), {32, 0, channels_last, DataType::bf16});
    ASSERT_TRUE(ops.is_ok()) << ops.status().message();
    for (const ModelOp& op : ops.value()) {
      const OpDescriptor& d = op.desc;
      const bool written_for = op.layer == "b0.conv" || op.layer == "b1.conv" ||
                               op.layer == "b2.c3k2.m.cv1" || op.layer == "b2.c3k2.m.cv2";
      if (!written_for || !pixel_filters_support(d).is_ok()) continue;
      leads += pixel_filters_lead(d) ? 1 : 0;
      SCOPED_TRACE(fmt::format("{} ({})", op.layer, descriptor_name(d)));
      auto source = kernel_source(d, kPixelsVariant);
      ASSERT_TRUE(source.is_ok()) << source.status().message();
      for (const char* arch : {"sm_80", "sm_90"}) {
        auto module = compile_kernel(source.value(), arch);
        ASSERT_TRUE(module.is_ok()) << module.status().message();
        const CompiledModule& m = module.value();
        const std::size_t shared = source.value().entries[0].dynamic_shared_bytes;
        EXPECT_GT(shared, 0u);
        EXPECT_LE(shared, static_cast<std::size_t>(CONVJIT_PIXELS_MAX_SHARED_BYTES));
        EXPECT_EQ(m.stats.spill_stores + m.stats.spill_loads, 0) << m.log;
        EXPECT_LE(m.stats.max_registers * kJitThreadsPerBlock, kRegisterFile) << m.log;
        EXPECT_NE(m.ptx.find("ld.shared.v4"), std::string::npos) << "the filters' 16-byte reads";
        if (channels_last) {
          EXPECT_NE(m.ptx.find("st.global.v4"), std::string::npos) << "y's 16-byte chunks";
        }
        fmt::print("  {:20} {:7} {:4} {}: {:3} registers, {:5} bytes shared, {:.0f} ms\n", op.layer,
                   direction_name(d.direction), channels_last ? "nhwc" : "nchw", arch,
                   m.stats.max_registers, shared, m.compile_ms);
      }
      ++checked;
    }
  }
  EXPECT_EQ(checked, 12) << "the stem's and the two 3 x 3 convs' fwd, the 3 x 3 convs' and b1's "
                            "bwddata, in both layouts";
  EXPECT_EQ(leads, 6) << "the stem's fwd, the 8-channel conv's fwd, the 16-channel conv's bwddata";
}

// ResNet-50's and YOLO11n's pools in NCHW bf16, fwd and bwd (max bwd
// stages dy's and x's halos), but for global pools, whose halo is the
// whole plane.
TEST(JitStaticChecks, ThePoolTileKernelsStageTheirHalosInSharedMemory) {
  int checked = 0;
  for (const char* model : {"resnet50", "yolo11n"})
    for (const ModelOp& op : nchw_ops(model))
      if (op.desc.is_pool() && op.desc.window[0] != op.desc.x_dims[2]) {
        check_plane_tile_kernel(op, kTileVariant);
        ++checked;
      }
  EXPECT_GE(checked, 4);
}

// The pools and upsamples (fwd and bwd), some batchnorms and bias
// gradients of ResNet-50 and YOLO11n in channels-last bf16 (a bias
// gradient writes f32 sums, not vectors).
TEST(JitStaticChecks, TheVectorKernelsMoveChannelsIn16ByteAccesses) {
  int pools = 0, resizes = 0, norms = 0, biases = 0;
  for (const char* model : {"resnet50", "yolo11n"})
    for (const ModelOp& op : model_ops(model))
      if (op.desc.is_pool() || op.desc.is_resize()) {
        check_vector_kernel(op, kVectorVariant, true);
        ++(op.desc.is_pool() ? pools : resizes);
      } else if (op.desc.is_batchnorm() && norms < 4) {
        check_vector_kernel(op, kVectorVariant, true);
        ++norms;
      } else if (op.desc.kind == OpKind::bias_grad && biases < 4) {
        check_vector_kernel(op, kVectorVariant, false);
        ++biases;
      }
  EXPECT_GE(pools, 4);
  EXPECT_EQ(resizes, 4);
  EXPECT_EQ(norms, 4);
  EXPECT_EQ(biases, 4);
}

// A Conv+BN+SiLU block with a residual, fused, in every fwd variant the
// JIT offers for a YOLO11n dense conv and a depthwise conv (channels-last
// bf16, sm_90: the Hopper conv's among them), and the epilogue pass that
// follows cuDNN's plain conv: each compiles with its epilogue's exp, fits
// and does not spill; the GEMM tiles keep their instructions.
TEST(JitStaticChecks, FusedEpiloguesCompileInEveryFwdVariantWithoutSpills) {
  int dense = 0, depthwise = 0;
  for (const ModelOp& op : model_ops("yolo11n")) {
    OpDescriptor d = op.desc;
    if (d.kind != OpKind::conv || d.direction != Direction::fwd) continue;
    const bool is_dw = is_depthwise(d);
    if (is_dw ? depthwise > 0 : (dense > 0 || d.w_dims[1] != 64)) continue;
    (is_dw ? depthwise : dense) += 1;
    d.activation = Activation::silu;
    d.epilogue_operands = kEpilogueBias | kEpilogueResidual;
    std::vector<std::string> variants = jit_variants(d, variant_context("sm_90"));
    variants.emplace_back(kEpiloguePassVariant);  // cuDNN's conv, then the epilogue alone
    for (const std::string& variant : variants) {
      SCOPED_TRACE(fmt::format("{} {} ({})", op.layer, variant, descriptor_name(d)));
      auto source = kernel_source(d, variant);
      ASSERT_TRUE(source.is_ok()) << source.status().message();
      auto module = compile_kernel(source.value(), "sm_90");
      ASSERT_TRUE(module.is_ok()) << module.status().message();
      const CompiledModule& m = module.value();
      EXPECT_NE(m.ptx.find("ex2.approx"), std::string::npos) << "no exp for the SiLU";
      if (find_gemm_tile(variant) != nullptr) {
        EXPECT_NE(m.ptx.find("mma.sync"), std::string::npos) << "no mma.sync";
      }
      if (find_wgmma_config(variant) != nullptr) {
        EXPECT_NE(m.ptx.find("wgmma.mma_async"), std::string::npos) << "no wgmma";
      }
      EXPECT_EQ(m.stats.spill_stores + m.stats.spill_loads, 0) << m.log;
      EXPECT_LE(m.stats.max_registers * widest_block(source.value()), kRegisterFile) << m.log;
      std::printf("  %-28s %-14s sm_90: %3d registers, %.0f ms\n", op.layer.c_str(),
                  variant.c_str(), m.stats.max_registers, m.compile_ms);
    }
  }
  EXPECT_EQ(dense, 1);
  EXPECT_EQ(depthwise, 1);
}

// The Hopper conv (wgmma_conv.hpp), each configuration, on the
// representative layers it serves, in every direction (the 128 x 64 and
// 256 x 128 tiles: fwd and bwddata), in bf16 for sm_90a:
// TMA, mbarriers, wgmma and setmaxnreg in its PTX, no spills, its
// consumers' registers within the register file at its block's threads
// (384 for two consumers), and its rings within an SM's shared memory at
// its blocks per SM.  The compile time is printed (issue: at most 400 ms
// median).  Each configuration compiles every other layer, in turn with
// the next (each layer in half the configurations): the layers' kinds
// (1x1, 3x3, strided, 3D, channels on and off the 64-channel K step) are
// each several a model, and a configuration's code differs from the
// others' by constants, not by layer; all of them were 230 NVRTC compiles.
// `d`'s Hopper conv kernel in `config` and its module for sm_90a; none
// (after a failure) where either does not build.
std::optional<std::pair<KernelSource, CompiledModule>> hopper_module(
    const OpDescriptor& d, const WgmmaConvConfig& config) {
  auto source = kernel_source(d, config.id);
  EXPECT_TRUE(source.is_ok()) << source.status().message();
  if (!source.is_ok()) return std::nullopt;
  auto module = compile_kernel(source.value(), "sm_90");
  EXPECT_TRUE(module.is_ok()) << module.status().message();
  if (!module.is_ok()) return std::nullopt;
  return std::pair{std::move(source).value(), std::move(module).value()};
}

TEST(JitStaticChecks, TheHopperConvUsesTmaMbarriersAndWgmmaAndDoesNotSpill) {
  constexpr long long kSharedPerSm = 228 * 1024, kReservedPerBlock = 1024;
  int checked = 0, parity = 0, stored_by_tma = 0, summed_in_clusters = 0;
  for (const WgmmaConvConfig& config : kWgmmaConfigs) {
    parity ^= 1;
    for (Direction direction : {Direction::fwd, Direction::bwddata, Direction::bwdfilt}) {
      // Odd layers in one configuration, even in the next: counted per
      // direction, so that the two bwdfilt configurations cover them all.
      int turn = parity;
      for (const auto& [layer, d] : representative_layers(DataType::bf16, direction, true)) {
        if (!wgmma_conv_support(d, config).is_ok() || turn++ % 2 != 0) continue;
        SCOPED_TRACE(fmt::format("{} {} {} ({})", config.id, layer, direction_name(direction),
                                 descriptor_name(d)));
        const auto built = hopper_module(d, config);
        ASSERT_TRUE(built.has_value());
        const auto& [source, m] = *built;
        // A consumer's N: the tile's (the configuration's, or 32:
        // wgmma_conv_launch), but 128 each of a 256-filter tile's two.
        const std::string wgmma =
            fmt::format("wgmma.mma_async.sync.aligned.m64n{}k16.f32.bf16.bf16",
                        std::min(wgmma_conv_launch(d, config).filters, WgmmaConvTile::kFilters));
        for (const std::string& instruction :
             {std::string(".global.im2col.mbarrier::complete_tx::bytes"),
              std::string("mbarrier.try_wait.parity"), wgmma, std::string("setmaxnreg.inc")})
          EXPECT_NE(m.ptx.find(instruction), std::string::npos) << "no " << instruction;
        // The filters come by tile loads; a bwdfilt reads dy and x, both im2col.
        if (direction != Direction::bwdfilt) {
          EXPECT_NE(m.ptx.find("cp.async.bulk.tensor.5d.shared::cluster.global.tile"),
                    std::string::npos);
        }
        // The tile to y by TMA where the launch says so (a forward conv's
        // whole tiles, y's pixels rows of one stride; with row taps by
        // pieces of rows, y a 3D tensor), its wait before the staging is
        // written again.
        const bool tma_store = wgmma_conv_launch(d, config).tma_store;
        for (const char* instruction :
             {config.row_taps ? "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group"
                              : "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group",
              "cp.async.bulk.wait_group.read 0", "fence.proxy.async.shared::cta"})
          EXPECT_EQ(m.ptx.find(instruction) != std::string::npos, tma_store) << instruction;
        stored_by_tma += tma_store;
        EXPECT_NE(m.ptx.find(config.blocks_per_sm > 1 ? "setmaxnreg.inc.sync.aligned.u32 216"
                                                      : "setmaxnreg.inc.sync.aligned.u32 232"),
                  std::string::npos);
        // In clusters: the shared operand multicast (the filters, or with
        // cluster_pixels the im2col box of the pixels), the remote
        // releases, the barrier that publishes the inits; elsewhere none.
        // A bwdfilt's clusters of slices (cluster_slices): the barriers,
        // the reads of the other blocks' sums.
        const bool clustered = config.cluster > 1;
        const bool sums = wgmma_conv_launch(d, config).cluster_slices > 0;
        const auto has = [&m](const char* instruction) {
          return m.ptx.find(instruction) != std::string::npos;
        };
        EXPECT_EQ(has("mapa.shared::cluster.u32"), clustered || sums);
        EXPECT_EQ(has("mbarrier.arrive.release.cluster.shared::cluster.b64"), clustered);
        EXPECT_EQ(has("barrier.cluster.arrive.release.aligned"), clustered || sums);
        EXPECT_EQ(has("ld.shared::cluster.v2.b32"), sums);
        summed_in_clusters += sums;
        EXPECT_EQ(m.ptx.find(".global.tile.mbarrier::complete_tx::bytes.multicast::cluster") !=
                      std::string::npos,
                  clustered && !config.cluster_pixels);
        EXPECT_EQ(m.ptx.find(".global.im2col.mbarrier::complete_tx::bytes.multicast::cluster") !=
                      std::string::npos,
                  clustered && config.cluster_pixels);
        // A folded stem's first pass writes x' (and a fwd's w'); a bwdfilt's
        // second pass unfolds dw'.  YOLO11n's bwdfilt of 8 channels folds.
        if (folds_taps(d)) {
          EXPECT_EQ(source.entries.front().name, "convjit_kernel_prepare");
          EXPECT_NE(m.ptx.find(".entry convjit_kernel_prepare"), std::string::npos);
          if (direction == Direction::bwdfilt) {
            EXPECT_EQ(source.entries.back().name, "convjit_kernel_finish");
            EXPECT_NE(m.ptx.find(".entry convjit_kernel_finish"), std::string::npos);
          }
        }
        EXPECT_EQ(m.stats.spill_stores + m.stats.spill_loads, 0) << m.log;
        EXPECT_LE(m.stats.max_registers * widest_block(source), kRegisterFile) << m.log;
        const auto main =
            std::find_if(source.entries.begin(), source.entries.end(),
                         [](const KernelEntry& e) { return e.name == "convjit_kernel"; });
        ASSERT_NE(main, source.entries.end());
        EXPECT_EQ(main->threads_per_block, static_cast<unsigned>(config.threads()));
        const long long block_shared = entry_shared_bytes(m, "convjit_kernel") +
                                       static_cast<long long>(main->dynamic_shared_bytes);
        EXPECT_LE(block_shared, static_cast<long long>(kOptInSharedLimit));
        EXPECT_LE(config.blocks_per_sm * (block_shared + kReservedPerBlock), kSharedPerSm);
        std::printf("  %-24s %-7s %-14s sm_90a: %3d registers, %.0f ms\n", layer.c_str(),
                    std::string(direction_name(direction)).c_str(),
                    std::string(config.id).c_str(), m.stats.max_registers, m.compile_ms);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 16);
  EXPECT_GT(summed_in_clusters, 0);
  EXPECT_GT(stored_by_tma, 0);
  EXPECT_LT(stored_by_tma, checked);
}

// Stream-K (CONVJIT_WGMMA_STREAM_K=1) in the ping-pong tiles, fwd and
// stride-1 bwddata, wherever it runs on the representative layers: the
// parts' sums read 16 bytes a thread past the L1 (ld.global.cg) after
// the fenced count of arrivals, and no spills.
TEST(JitStaticChecks, TheHopperConvsStreamKCountsItsPartsWithoutSpills) {
  const test::SettingScope stream_k("CONVJIT_WGMMA_STREAM_K", "1");
  int checked = 0;
  for (const WgmmaConvConfig& config : kWgmmaConfigs) {
    if (!config.ping_pong || config.cluster > 1) continue;
    for (Direction direction : {Direction::fwd, Direction::bwddata})
      for (const auto& [layer, d] : representative_layers(DataType::bf16, direction, true)) {
        if (!wgmma_conv_support(d, config).is_ok() || wgmma_conv_launch(d, config).stream_k == 0)
          continue;
        SCOPED_TRACE(fmt::format("{} {} {} ({})", config.id, layer, direction_name(direction),
                                 descriptor_name(d)));
        const auto built = hopper_module(d, config);
        ASSERT_TRUE(built.has_value());
        const auto& [source, m] = *built;
        for (const char* instruction : {"ld.global.cg.v4.u32", "atom.global.add.f32", "membar.gl"})
          EXPECT_NE(m.ptx.find(instruction), std::string::npos) << "no " << instruction;
        EXPECT_EQ(m.stats.spill_stores + m.stats.spill_loads, 0) << m.log;
        EXPECT_LE(m.stats.max_registers * widest_block(source), kRegisterFile) << m.log;
        std::printf("  %-24s %-7s %-14s Stream-K sm_90a: %3d registers, %.0f ms\n", layer.c_str(),
                    std::string(direction_name(direction)).c_str(), std::string(config.id).c_str(),
                    m.stats.max_registers, m.compile_ms);
        ++checked;
      }
  }
  EXPECT_GE(checked, 3);
}

// A bwddata with K R S C filters reads them in place (copies nothing), as
// MN-major boxes that its wgmmas transpose (imm-trans-b 1), in
// every configuration: ResNet-50's 3x3 and 1x1 (stride 1 as the forward
// conv, 2 by phases, which clusters and the row-tap tiles do not serve,
// nor the latter a 1x1) and a CosmoFlow 3D layer (none of them with dx
// channels enough for a cluster sharing its pixel tile).
TEST(JitStaticChecks, TheHopperConvReadsABwddatasKrscFiltersInPlace) {
  const std::set<std::string> layers = {"resnet50 3x3", "resnet50 1x1", "resnet50 3x3 /2",
                                        "resnet50 1x1 /2", "cosmoflow 3D 3x3x3 C=128"};
  int checked = 0, refused = 0;
  for (const WgmmaConvConfig& config : kWgmmaConfigs)
    for (const auto& [layer, d] :
         representative_layers(DataType::bf16, Direction::bwddata, true, true)) {
      if (layers.count(layer) == 0) continue;
      SCOPED_TRACE(fmt::format("{} {} ({})", config.id, layer, descriptor_name(d)));
      const bool strided = layer.find(" /2") != std::string::npos;
      // Clusters of a strided bwddata, or sharing a pixel tile among filter
      // tiles that make no whole clusters; the row-tap tiles of one tap
      // along W or strided.
      const long long filter_tiles = (d.x_dims[1] + config.filters - 1) / config.filters;
      if ((config.cluster > 1 && strided) ||
          (config.cluster_pixels && filter_tiles % config.cluster != 0) ||
          (config.row_taps && (strided || layer.find("1x1") != std::string::npos))) {
        EXPECT_FALSE(wgmma_conv_support(d, config).is_ok());
        ++refused;
        continue;
      }
      auto source = kernel_source(d, config.id);
      ASSERT_TRUE(source.is_ok()) << source.status().message();
      // No copy: no first pass, but the 1x1 /2's, which writes its three
      // phases without taps in 16-byte stores.
      const bool fills = layer == "resnet50 1x1 /2";
      ASSERT_EQ(source.value().entries.size(), fills ? 2u : 1u);
      EXPECT_FALSE(source.value().entries.front().copies_filters);
      auto module = compile_kernel(source.value(), "sm_90");
      ASSERT_TRUE(module.is_ok()) << module.status().message();
      const CompiledModule& m = module.value();
      const std::size_t prepare = m.ptx.find(".entry convjit_kernel_prepare");
      ASSERT_NE(prepare, std::string::npos);
      const std::string first_pass =
          m.ptx.substr(prepare, m.ptx.find(".entry", prepare + 1) - prepare);
      EXPECT_EQ(first_pass.find("st.global.v4") != std::string::npos, fills) << first_pass;
      EXPECT_NE(m.ptx.find("cp.async.bulk.tensor.5d.shared::cluster.global.tile"),
                std::string::npos);
      EXPECT_NE(m.ptx.find(fmt::format("m64n{}k16.f32.bf16.bf16",
                                       std::min(config.filters, WgmmaConvTile::kFilters))),
                std::string::npos);
      EXPECT_NE(m.ptx.find("p, 1, 1, 0, 1;"), std::string::npos) << "no transposed B";
      EXPECT_EQ(m.stats.spill_stores + m.stats.spill_loads, 0) << m.log;
      EXPECT_LE(m.stats.max_registers * widest_block(source.value()), kRegisterFile) << m.log;
      ++checked;
    }
  EXPECT_EQ(checked + refused, static_cast<int>(layers.size() * std::size(kWgmmaConfigs)));
  EXPECT_EQ(refused, 2 + 4 * 3 + 2 * 5)
      << "the clusters' two strided layers, the row-tap tiles' three, and the pixel clusters' "
         "five: their dx channels (64 or 128) make one or two filter tiles, no whole cluster "
         "(EmulatedWgmmaConv.PixelClusterTile runs their bwddata's K R S C filters in place)";
}

TEST(JitStaticChecks, StrictF32RunsSimtTilesAndTf32RunsTensorCores) {
  const auto layers = representative_layers(DataType::f32);
  const Expected simt{{"fma.rn.f32", "cp.async.cg.shared.global"}, false};
  const Expected tf32{{"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32", "cvt.rna.tf32.f32",
                       "ldmatrix.sync.aligned"},
                      true};
  for (const auto& [layer, d] : layers) {
    if (layer != "resnet50 3x3" && layer != "yolo11n C=64") continue;
    for (const GemmTile& tile : gemm_tiles())
      check_variant(layer, d, tile, "sm_90", tile.math == GemmMath::simt ? simt : tf32);
  }
}

}  // namespace
}  // namespace convjit
