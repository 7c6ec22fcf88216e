#include "dispatcher/backends/jit/kernel_variants.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <span>

#include "dispatcher/backends/jit/ceil_div.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/backends/jit/pixel_filters.hpp"
#include "dispatcher/backends/jit/tap_fold.hpp"
#include "dispatcher/backends/jit/wgmma_conv.hpp"
#include "dispatcher/cuda/gpu_arch.hpp"
#include "dispatcher/descriptor/canonical_layout.hpp"
#include "dispatcher/descriptor/dtype.hpp"
#include "dispatcher/settings.hpp"
#include "kernel_templates/common/plane_tile_shape.cuh"
#include "kernel_templates/gemm/tile_configs.cuh"

namespace convjit {

namespace {

// cp.async and mma.sync's m16n8k16 and TF32 shapes need sm_80.
constexpr int kGemmArch = 80;
// Blocks that fill a large GPU once (an H100 has 132 SMs); fewer leave
// SMs idle, which the tile choice weighs.
constexpr double kFullGrid = 132;

#define CONVJIT_TILE_ROW(math, id, bm, bn, warps_m, warps_n, stages) \
  GemmTile{#id, bm, bn, warps_m, warps_n, stages, math},
#define CONVJIT_TENSOR_CORE_ROW(...) CONVJIT_TILE_ROW(GemmMath::tensor_core, __VA_ARGS__)
#define CONVJIT_SIMT_ROW(...) CONVJIT_TILE_ROW(GemmMath::simt, __VA_ARGS__)
constexpr GemmTile kGemmTiles[] = {CONVJIT_TENSOR_CORE_TILES(CONVJIT_TENSOR_CORE_ROW)
                                       CONVJIT_SIMT_TILES(CONVJIT_SIMT_ROW)};
#undef CONVJIT_SIMT_ROW
#undef CONVJIT_TENSOR_CORE_ROW
#undef CONVJIT_TILE_ROW

// Where the direct kernel still wins: a GEMM side or reduction below an
// mma tile's (depthwise convs and their kin) leaves the tile mostly
// zeros, and a tiny problem is all pipeline start-up.
bool direct_is_better(const GemmShape& s) {
  constexpr long long kTinyMacs = 1 << 18;
  return s.k < 16 || s.n < 8 || s.m < 8 || s.m * s.n * s.k * s.count < kTinyMacs;
}

long long output_tiles(const GemmShape& s, const GemmTile& t) {
  return ceil_div(s.m, t.bm) * ceil_div(s.n, t.bn) * s.count;
}

// Higher is better: the share of the tiles' area that is real output,
// times how well the grid fills the GPU, times the tile's operand reuse.
double tile_value(const GemmTile& t, const GemmShape& s) {
  const long long tiles_m = ceil_div(s.m, t.bm), tiles_n = ceil_div(s.n, t.bn);
  const double useful =
      static_cast<double>(s.m * s.n) / static_cast<double>(tiles_m * t.bm * tiles_n * t.bn);
  const double fill = std::min(1.0, static_cast<double>(gemm_blocks(s, t)) / kFullGrid);
  const double reuse = static_cast<double>(t.bm * t.bn) / (t.bm + t.bn);
  return useful * fill * reuse;
}

// The taps of one dimension that reach the first phase of a strided
// backward-data conv: every step-th, step = stride / gcd(stride, dilation).
long long first_phase_taps(long long taps, long long stride, long long dilation) {
  return ceil_div(taps, stride / std::gcd(stride, dilation));
}

bool tensor_cores_allowed(const OpDescriptor& d, const VariantContext& c) {
  return d.dtype != DataType::f32 || c.allow_tf32;
}

bool arch_has_gemm(const VariantContext& c) {
  return c.arch.empty() || arch_number(c.arch) >= kGemmArch;
}

// Where the 16-byte channel vectors of the depthwise and pooling kernels
// apply: channels-last activations and whole vectors of channels (and
// for depthwise convs one filter per channel).  Elsewhere they run
// element by element, and the direct kernel, one thread per output along
// the pixels, coalesces better.
bool channels_vectorise(const OpDescriptor& d) {
  const auto vector = static_cast<std::int64_t>(16 / element_size(d.dtype));
  return d.x_dims[1] % vector == 0 && d.y_dims[1] % vector == 0 && d.x_strides[1] == 1 &&
         d.y_strides[1] == 1;
}
bool bias_grad_vectorises(const OpDescriptor& d) {
  const auto vector = static_cast<std::int64_t>(16 / element_size(d.dtype));
  return d.y_dims[1] % vector == 0 && d.y_strides[1] == 1;
}
// A batchnorm's vector kernels sum a block's rows of channel vectors in
// shared memory (norm/batchnorm_reduction.cuh): its vectors must fit a block.
Status check_batchnorm_vectors(const OpDescriptor& d) {
  const auto vector = static_cast<std::int64_t>(16 / element_size(d.dtype));
  const std::int64_t vectors = (d.x_dims[1] + vector - 1) / vector;
  if (vectors <= kJitThreadsPerBlock) return Status::ok();
  return Status::not_available(fmt::format(
      "variant vector sums a batchnorm's channels in vectors of {}, at most {} of them ({} "
      "channels); this one has {} channels",
      vector, kJitThreadsPerBlock, vector * kJitThreadsPerBlock, d.x_dims[1]));
}
bool depthwise_vectorises(const OpDescriptor& d) {
  return d.w_dims[0] == d.x_dims[1] && channels_vectorise(d);
}

// The shared memory a plane-tile kernel stages (common/plane_tile.cuh), in
// f32: fwd and bwdfilt, the input its outputs read; backward, the outputs
// its inputs receive from, and for max pooling the input those outputs'
// windows cover.
long long plane_tile_bytes(const OpDescriptor& d) {
  const Window3 win = canonical_window(d);
  const long long tile[3] = {1, CONVJIT_PLANE_TILE_ROWS, CONVJIT_PLANE_TILE_COLS};
  long long inputs = 1, gradients = 1, windows = 1;
  for (std::size_t i = 0; i < 3; ++i) {
    const long long span = tile[i] - 1, reach = (win.size[i] - 1) * win.dilation[i];
    const long long received = (span + reach + win.stride[i] - 1) / win.stride[i] + 1;
    inputs *= span * win.stride[i] + reach + 1;
    gradients *= received;
    windows *= (received - 1) * win.stride[i] + reach + 1;
  }
  const bool max_bwd = d.pool_mode == PoolingMode::max && d.direction == Direction::bwd;
  const bool reads_inputs = d.direction == Direction::fwd || d.direction == Direction::bwdfilt;
  const long long elements = reads_inputs ? inputs : gradients + (max_bwd ? windows : 0);
  return elements * static_cast<long long>(sizeof(float));
}

// Whether a plane-tile variant's halo fits the shared memory a block may
// declare statically; why not, where it does not.
Status check_plane_tile(const OpDescriptor& d, std::string_view variant) {
  constexpr long long kStaticShared = 48 * 1024;
  if (plane_tile_bytes(d) <= kStaticShared) return Status::ok();
  return Status::not_available(fmt::format(
      "variant {} would stage {} bytes of halo, beyond the {} of shared memory a block may "
      "declare; use '{}' or 'direct'",
      variant, plane_tile_bytes(d), kStaticShared,
      d.is_pool() ? kVectorVariant : kDepthwiseVariant));
}

// The tile kernels' loads and stores run along W.
bool rows_contiguous(const OpDescriptor& d) {
  const auto w = static_cast<std::size_t>(d.spatial_dims) + 1;
  return d.x_strides[w] == 1 && d.y_strides[w] == 1;
}

}  // namespace

std::span<const GemmTile> gemm_tiles() { return kGemmTiles; }

const GemmTile* find_gemm_tile(std::string_view id) {
  for (const GemmTile& t : gemm_tiles())
    if (t.id == id) return &t;
  return nullptr;
}

std::optional<GemmShape> gemm_shape(const OpDescriptor& d) {
  if (d.kind != OpKind::conv) return std::nullopt;
  const int k_step = d.dtype == DataType::f32 ? 16 : 32;
  const long long filters = d.w_dims[0] / d.groups, channels = d.w_dims[1];
  long long outputs = d.y_dims[0], taps = 1, phase_inputs = d.x_dims[0], phase_taps = 1, phases = 1;
  for (std::size_t i = 0; i < static_cast<std::size_t>(d.spatial_dims); ++i) {
    outputs *= d.y_dims[2 + i], taps *= d.w_dims[2 + i];
    phase_inputs *= ceil_div(d.x_dims[2 + i], d.stride[i]);
    phase_taps *= first_phase_taps(d.w_dims[2 + i], d.stride[i], d.dilation[i]);
    phases *= d.stride[i];
  }
  switch (d.direction) {
    case Direction::fwd:
      return GemmShape{outputs, filters, taps * channels, d.groups, k_step, false};
    case Direction::bwddata:
      return GemmShape{phase_inputs,      channels, phase_taps * filters,
                       d.groups * phases, k_step,   false};
    case Direction::bwdfilt:
      return GemmShape{filters, taps * channels, outputs, d.groups, k_step, true};
    default:
      return std::nullopt;
  }
}

long long gemm_split(const GemmShape& s, const GemmTile& t) {
  if (!s.split_k) return 1;
  constexpr long long kMinStepsPerSlice = 16;
  constexpr long long kMaxPartialBytes = 64ll << 20;
  const long long tiles = output_tiles(s, t);
  const long long wanted = ceil_div(2 * static_cast<long long>(kFullGrid), tiles);
  const long long by_steps = ceil_div(s.k, s.k_step) / kMinStepsPerSlice;
  const long long by_memory =
      kMaxPartialBytes / (s.m * s.n * s.count * static_cast<long long>(sizeof(float)));
  return std::max(1ll, std::min({wanted, by_steps, by_memory}));
}

long long gemm_blocks(const GemmShape& s, const GemmTile& t) {
  return output_tiles(s, t) * gemm_split(s, t);
}

namespace {

// Where the Hopper conv is the choice on an sm_90 GPU, as an H200 timed
// it against the best tile on every dense conv of ResNet-50 and YOLO11n
// (bf16, channels-last, batch 32).  fwd and bwddata: from 16 channels a
// K step, x's (fwd) or dy's (bwddata).  With a 64-channel K step it lost
// on all 7 layers of 8 or 16 (1.01-1.84x the tile's time,
// bench/results/2026-11-28-h200); with the 16-channel step
// (wgmma_step_channels) it won on the 16-channel ones, 0.49-0.65x
// tc128x32's time, and tied on 8 (bench/results/2026-12-04-h200).
// bwdfilt, whose K step is 64 output pixels, always full: where the
// tile's two sides, a group's filters and channels, are 16 or more.  It
// lost on the two layers with a side of 8 (1.17x and 1.72x tc64x64's
// time), both of 16 filters or fewer, before its tile skipped a second 64
// filters it does not have; that is predicted to take 0.52x the time on
// such layers (bench/results/2026-12-05-hopper-bwdfilt), so it leads
// from a side of 8 where it has 64 filters or fewer (untimed).  A conv
// that folds its taps (tap_fold.hpp) leads, fwd or bwdfilt: a stem's 3
// channels, which the tiles gather element by element (ResNet-50's stem
// fwd: 0.49x cuDNN's time on the H200), and a bwdfilt's 8 or 16 (predicted
// 0.35-0.50x the unfolded time, untimed).  In the emulator it stays last.
bool wgmma_leads(const OpDescriptor& d, const VariantContext& c, const GemmShape& shape) {
  constexpr long long kStepChannels = 16, kBwdfiltSide = 16, kSkippingBwdfiltSide = 8,
                      kOneBoxOfFilters = 64;
  if (c.arch.empty() || direct_is_better(shape)) return false;
  if (folds_taps(d)) return true;  // the tiles gather its channels one by one
  const long long filters = d.w_dims[0] / d.groups, channels = d.w_dims[1];
  if (d.direction == Direction::bwdfilt)
    return std::min(filters, channels) >=
           (filters <= kOneBoxOfFilters ? kSkippingBwdfiltSide : kBwdfiltSide);
  return (d.direction == Direction::bwddata ? filters : channels) >= kStepChannels;
}

// The direct kernel and the tiles, the heuristic's choice first.
std::vector<std::string> gemm_variants(const OpDescriptor& d, const VariantContext& c) {
  const std::optional<GemmShape> gemm = gemm_shape(d);
  if (!gemm || !arch_has_gemm(c)) return {std::string(kDirectVariant)};
  const GemmShape& shape = *gemm;
  std::vector<const GemmTile*> tiles;
  for (const GemmTile& t : gemm_tiles())
    if (check_variant(d, t.id, c).is_ok()) tiles.push_back(&t);
  // Tensor cores first where allowed, then by value; stable keeps the table's order on ties.
  std::stable_sort(tiles.begin(), tiles.end(), [&](const GemmTile* a, const GemmTile* b) {
    if (a->math != b->math) return a->math == GemmMath::tensor_core;
    return tile_value(*a, shape) > tile_value(*b, shape);
  });
  std::vector<std::string> ids;
  if (direct_is_better(shape)) ids.emplace_back(kDirectVariant);
  for (const GemmTile* t : tiles) ids.emplace_back(t->id);
  if (!direct_is_better(shape)) ids.emplace_back(kDirectVariant);
  // The Hopper conv's lead variant (wgmma_lead_config) leads or comes
  // last; the others that apply follow it at the end until a GPU has timed
  // them.
  if (check_variant(d, kWgmmaVariant, c).is_ok()) {
    const WgmmaConvConfig& lead = wgmma_lead_config(d);
    const auto at = wgmma_leads(d, c, shape) ? ids.begin() : ids.end();
    ids.insert(at, std::string(lead.id));
    for (const WgmmaConvConfig& config : kWgmmaConfigs)
      if (config.id != lead.id && wgmma_conv_support(d, config).is_ok())
        ids.emplace_back(config.id);
  }
  return ids;
}

// wgmma, TMA and setmaxnreg are sm_90a's: the emulator runs them, and an
// sm_90 GPU (H100, H200); not a later one.
Status check_wgmma_variant(const OpDescriptor& d, const WgmmaConvConfig& config,
                           const VariantContext& c) {
  constexpr int kHopper = 90;
  if (!c.arch.empty() && arch_number(c.arch) != kHopper)
    return Status::not_available(fmt::format(
        "variant {} runs wgmma and TMA, which are sm_90a's (H100, H200); {} has neither",
        config.id, c.arch));
  return wgmma_conv_support(d, config);
}

}  // namespace

bool is_depthwise(const OpDescriptor& d) {
  return d.kind == OpKind::conv && d.w_dims[1] == 1 && d.groups > 1;
}

std::vector<std::string> jit_variants(const OpDescriptor& d, const VariantContext& c) {
  std::vector<std::string> ids = gemm_variants(d, c);
  if (pixel_filters_support(d).is_ok()) {
    // Where it does not lead: after the others but the Hopper conv's
    // trailing ones, offered last until a GPU times them.
    const auto trailing = std::find_if_not(ids.rbegin(), ids.rend(), [](const std::string& id) {
                            return find_wgmma_config(id) != nullptr;
                          }).base();
    ids.insert(pixel_filters_lead(d) ? ids.begin() : trailing, std::string(kPixelsVariant));
  }
  if (is_depthwise(d)) {
    const bool vectors = depthwise_vectorises(d);
    ids.insert(vectors ? ids.begin() : ids.end(), std::string(kDepthwiseVariant));
    if (check_variant(d, kDepthwiseTileVariant, c).is_ok()) {
      const bool first = !vectors && rows_contiguous(d);
      ids.insert(first ? ids.begin() : ids.end(), std::string(kDepthwiseTileVariant));
    }
  }
  const bool channel_op = d.is_pool() || d.is_resize() || d.is_batchnorm();
  if (channel_op && check_variant(d, kVectorVariant, c).is_ok()) {
    const bool vectors = channels_vectorise(d);
    ids.insert(vectors ? ids.begin() : ids.end(), std::string(kVectorVariant));
  }
  if (d.is_pool()) {
    const bool vectors = channels_vectorise(d);
    if (check_variant(d, kTileVariant, c).is_ok()) {
      const bool first = !vectors && rows_contiguous(d);
      ids.insert(first ? ids.begin() : ids.end(), std::string(kTileVariant));
    }
  }
  if (d.kind == OpKind::bias_grad) {
    const auto at = bias_grad_vectorises(d) ? ids.begin() : ids.end();
    ids.insert(at, std::string(kVectorVariant));
  }
  return ids;
}

Status check_variant(const OpDescriptor& d, std::string_view variant, const VariantContext& c) {
  if (variant == kDirectVariant) return Status::ok();
  if (variant == kPixelsVariant) return pixel_filters_support(d);
  if (variant == kVectorVariant) {
    if (d.is_pool() || d.is_resize() || d.kind == OpKind::bias_grad) return Status::ok();
    if (d.is_batchnorm()) return check_batchnorm_vectors(d);
    return Status::not_available(
        "variant vector serves pooling, resize, batchnorm and the bias gradient");
  }
  if (variant == kDepthwiseTileVariant) {
    if (!is_depthwise(d))
      return Status::not_available(
          "variant depthwise_tile serves depthwise convolutions (groups = C)");
    return check_plane_tile(d, variant);
  }
  if (variant == kTileVariant) {
    if (!d.is_pool()) return Status::not_available("variant tile serves pooling");
    return check_plane_tile(d, variant);
  }
  if (variant == kEpiloguePassVariant) {
    if (d.has_epilogue()) return Status::ok();
    return Status::not_available(
        "variant epilogue_pass applies a conv fwd's fused epilogue; this op has none");
  }
  if (variant == kDepthwiseVariant) {
    if (is_depthwise(d)) return Status::ok();
    return Status::not_available(
        "variant depthwise serves convolutions with one channel per group (groups = C)");
  }
  if (const WgmmaConvConfig* config = find_wgmma_config(variant))
    return check_wgmma_variant(d, *config, c);
  const GemmTile* tile = find_gemm_tile(variant);
  if (tile == nullptr) {
    std::string offered =
        "'direct', 'pixels', 'depthwise', 'depthwise_tile', 'vector', "
        "'tile', 'epilogue_pass'";
    for (const WgmmaConvConfig& config : kWgmmaConfigs) offered += fmt::format(", '{}'", config.id);
    return Status::not_available(fmt::format(
        "the JIT has no variant '{}'; it offers {} and the tiles of gemm/tile_configs.cuh",
        variant, offered));
  }
  if (!gemm_shape(d))
    return Status::not_available(
        fmt::format("variant {} is an implicit GEMM, which serves convolutions only", variant));
  if (!arch_has_gemm(c))
    return Status::not_available(fmt::format(
        "variant {} needs sm_80 or newer (cp.async, mma.sync); {} has neither", variant, c.arch));
  if (tile->math == GemmMath::simt && d.dtype != DataType::f32)
    return Status::not_available(fmt::format("variant {} is for f32; {} runs on tensor cores",
                                             variant, dtype_name(d.dtype)));
  if (tile->math == GemmMath::tensor_core && !tensor_cores_allowed(d, c))
    return Status::not_available(fmt::format(
        "variant {} runs f32 on TF32 tensor cores, which CONVJIT_ALLOW_TF32=0 forbids", variant));
  return Status::ok();
}

VariantContext variant_context(const std::string& arch) {
  return {arch, SettingsStore::instance().snapshot()->allow_tf32.value};
}

Result<std::string> resolve_variant(const OpDescriptor& desc, const std::string& arch,
                                    std::string_view variant) {
  const VariantContext context = variant_context(arch);
  if (variant.empty()) return jit_variants(desc, context).front();
  if (Status s = check_variant(desc, variant, context); !s.is_ok()) return s;
  return std::string(variant);
}

}  // namespace convjit
