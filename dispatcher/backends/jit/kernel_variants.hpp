// The JIT's kernel variants for a descriptor: the direct template (one
// thread per output element) and, for the ops an implicit GEMM serves, one
// variant per tile configuration of kernel_templates/gemm/tile_configs.cuh
// (tensor cores for f16 and bf16, and for f32 when TF32 is allowed; SIMT
// tiles for strict f32).  Ids are the configurations' names, stable across
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

enum class GemmMath { tensor_core, simt };

// One tile configuration: a row of tile_configs.cuh.
struct GemmTile {
  std::string_view id;
  int bm, bn, warps_m, warps_n, stages;
  GemmMath math;
};

[[nodiscard]] std::span<const GemmTile> gemm_tiles();
[[nodiscard]] const GemmTile* find_gemm_tile(std::string_view id);

// An op an implicit GEMM serves, as GEMM sizes per group: M output pixels,
// N filters, K = taps x channels; nullopt for the ops it does not serve.
struct GemmShape {
  long long m, n, k, groups;
};
[[nodiscard]] std::optional<GemmShape> gemm_shape(const OpDescriptor& desc);

// What the variants may use: the GPU's architecture ("" for the emulator,
// which runs them all) and whether f32 may run on TF32 tensor cores.
struct VariantContext {
  std::string arch;
  bool allow_tf32 = false;
};

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
