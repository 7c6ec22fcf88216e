// The JIT's kernel variants for a descriptor: the direct template (one
// thread per output element); for the ops an implicit GEMM serves, one
// variant per tile configuration of kernel_templates/gemm/tile_configs.cuh
// (tensor cores for f16 and bf16, and for f32 when TF32 is allowed; SIMT
// tiles for strict f32); and for depthwise convs, pooling and the bias
// gradient the kernels built for bandwidth.  Ids are the configurations' names, stable across
// processes: tuning records them, and the generated source, hence the
// cache key, names the tile.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

inline constexpr std::string_view kDirectVariant = "direct";
// The depthwise kernels (conv/depthwise_*.cuh): groups = C, every direction.
inline constexpr std::string_view kDepthwiseVariant = "depthwise";
// Depthwise convs with W contiguous (NCHW and its kin), through tiles
// staged in shared memory (conv/depthwise_{fwd,bwddata,bwdfilt}_tile.cuh).
inline constexpr std::string_view kDepthwiseTileVariant = "depthwise_tile";
// Pooling where W is contiguous, through tiles staged in shared memory
// (pool/pool_{fwd,bwd}_tile.cuh).
inline constexpr std::string_view kTileVariant = "tile";
// Pooling and the bias gradient in 16-byte channel vectors
// (pool/pool_*_vector.cuh, conv/bias_grad_vector.cuh).
inline constexpr std::string_view kVectorVariant = "vector";
// A fused conv fwd's epilogue alone, over a plain conv's result in y's
// layout (conv/epilogue_pass.cuh): what follows a backend that cannot fuse
// it.  Not a way to run the conv, so jit_variants() never lists it.
inline constexpr std::string_view kEpiloguePassVariant = "epilogue_pass";

enum class GemmMath { tensor_core, simt };

// One tile configuration: a row of tile_configs.cuh.
struct GemmTile {
  std::string_view id;
  int bm, bn, warps_m, warps_n, stages;
  GemmMath math;
};

[[nodiscard]] std::span<const GemmTile> gemm_tiles();
[[nodiscard]] const GemmTile* find_gemm_tile(std::string_view id);

// The GEMMs that serve an op, each M x N over a reduction K (see the
// conv/*_gemm.cuh templates):
//   fwd      M output pixels, N filters, K taps x channels, per group;
//   bwddata  per group and stride phase: M input pixels, N channels,
//            K taps x filters, the widest phase's (the tiles cover it);
//   bwdfilt  M filters, N taps x channels, K output pixels, per group,
//            with K split over blocks.
// nullopt for the ops no implicit GEMM serves.
struct GemmShape {
  long long m, n, k;
  long long count;    // independent GEMMs: groups (times phases for bwddata)
  int k_step;         // K per pipeline step: 64 bytes of the dtype
  bool split_k;       // bwdfilt: slices of K in separate blocks
};
[[nodiscard]] std::optional<GemmShape> gemm_shape(const OpDescriptor& desc);

// How many slices of K each output tile's reduction is cut into: enough
// blocks to fill a large GPU twice, each slice long enough to amortise
// the pipeline's start, and the f32 partial sums within 64 MiB.  1 where
// the shape does not split.
[[nodiscard]] long long gemm_split(const GemmShape& shape, const GemmTile& tile);

// The blocks a tile's launch takes: one per output tile, per GEMM, per slice.
[[nodiscard]] long long gemm_blocks(const GemmShape& shape, const GemmTile& tile);

// What the variants may use: the GPU's architecture ("" for the emulator,
// which runs them all) and whether f32 may run on TF32 tensor cores.
struct VariantContext {
  std::string arch;
  bool allow_tf32 = false;
};

// Whether the depthwise kernels serve the descriptor: a conv with one
// channel per group (any filters per group).
[[nodiscard]] bool is_depthwise(const OpDescriptor& desc);

// Every variant the JIT offers for a supported descriptor, the heuristic's
// choice first.
[[nodiscard]] std::vector<std::string> jit_variants(const OpDescriptor& desc,
                                                    const VariantContext& context);

// OK if `variant` serves the descriptor in the context, else why not.
[[nodiscard]] Status check_variant(const OpDescriptor& desc, std::string_view variant,
                                   const VariantContext& context);

// The context the current settings give for `arch`.
[[nodiscard]] VariantContext variant_context(const std::string& arch);

// The variant `variant` names, or the heuristic's choice for `arch` under
// the current settings when it is empty; NOT_AVAILABLE with the reason when
// the variant cannot serve the descriptor there.
[[nodiscard]] Result<std::string> resolve_variant(const OpDescriptor& desc,
                                                  const std::string& arch,
                                                  std::string_view variant);

}  // namespace convjit
