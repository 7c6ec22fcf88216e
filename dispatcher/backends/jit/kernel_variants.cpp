#include "dispatcher/backends/jit/kernel_variants.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "dispatcher/cuda/gpu_arch.hpp"
#include "dispatcher/settings.hpp"
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

// Where the direct kernel still wins: a reduction or a filter count below
// an mma tile's (depthwise convs and their kin) leaves the tile mostly
// zeros, and a tiny problem is all pipeline start-up.
bool direct_is_better(const GemmShape& s) {
  constexpr long long kTinyMacs = 1 << 18;
  return s.k < 16 || s.n < 8 || s.m * s.n * s.k * s.groups < kTinyMacs;
}

// Higher is better: the share of the tiles' area that is real output,
// times how well the grid fills the GPU, times the tile's operand reuse.
double tile_value(const GemmTile& t, const GemmShape& s) {
  const long long tiles_m = (s.m + t.bm - 1) / t.bm, tiles_n = (s.n + t.bn - 1) / t.bn;
  const double useful = static_cast<double>(s.m * s.n) /
                        static_cast<double>(tiles_m * t.bm * tiles_n * t.bn);
  const double fill =
      std::min(1.0, static_cast<double>(tiles_m * tiles_n * s.groups) / kFullGrid);
  const double reuse = static_cast<double>(t.bm * t.bn) / (t.bm + t.bn);
  return useful * fill * reuse;
}

bool tensor_cores_allowed(const OpDescriptor& d, const VariantContext& c) {
  return d.dtype != DataType::f32 || c.allow_tf32;
}

bool arch_has_gemm(const VariantContext& c) {
  return c.arch.empty() || arch_number(c.arch) >= kGemmArch;
}

}  // namespace

std::span<const GemmTile> gemm_tiles() { return kGemmTiles; }

const GemmTile* find_gemm_tile(std::string_view id) {
  for (const GemmTile& t : gemm_tiles())
    if (t.id == id) return &t;
  return nullptr;
}

std::optional<GemmShape> gemm_shape(const OpDescriptor& d) {
  if (d.kind != OpKind::conv || d.direction != Direction::fwd) return std::nullopt;
  long long pixels = d.y_dims[0], taps = 1;
  for (int i = 0; i < d.spatial_dims; ++i)
    pixels *= d.y_dims[static_cast<std::size_t>(2 + i)],
        taps *= d.w_dims[static_cast<std::size_t>(2 + i)];
  return GemmShape{pixels, d.w_dims[0] / d.groups, taps * d.w_dims[1], d.groups};
}

std::vector<std::string> jit_variants(const OpDescriptor& d, const VariantContext& c) {
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
  return ids;
}

Status check_variant(const OpDescriptor& d, std::string_view variant, const VariantContext& c) {
  if (variant == kDirectVariant) return Status::ok();
  const GemmTile* tile = find_gemm_tile(variant);
  if (tile == nullptr)
    return Status::not_available(fmt::format(
        "the JIT has no variant '{}'; it offers 'direct' and the tiles of gemm/tile_configs.cuh",
        variant));
  if (!gemm_shape(d))
    return Status::not_available(
        fmt::format("variant {} is an implicit GEMM, which serves conv fwd only", variant));
  if (!arch_has_gemm(c))
    return Status::not_available(fmt::format(
        "variant {} needs sm_80 or newer (cp.async, mma.sync); {} has neither", variant, c.arch));
  if (tile->math == GemmMath::simt && d.dtype != DataType::f32)
    return Status::not_available(fmt::format("variant {} is for f32; {} runs on tensor cores",
                                             variant, dtype_name(d.dtype)));
  if (tile->math == GemmMath::tensor_core && !tensor_cores_allowed(d, c))
    return Status::not_available(
        fmt::format("variant {} runs f32 on TF32 tensor cores, which CONVJIT_ALLOW_TF32=0 forbids",
                    variant));
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
