// A descriptor's compiled JIT module, from the persistent cache or freshly
// compiled with NVRTC and stored: the step `convjit preload` runs for every
// descriptor, and the JIT backend on a first call.
#pragma once

#include <string>
#include <string_view>

#include "cache/jit_cache.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/cuda/gpu_arch.hpp"
#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit {

struct PreparedModule {
  CacheEntry entry;       // preimage, metadata JSON, CUBIN
  bool compiled = false;  // false: it came from the cache
  std::string variant;    // kernel_variants.hpp's id
  // The source's TMA maps (from the descriptor, as the key is): each launch
  // binds them to its pointers.
  std::vector<TensorMapArgument> tensor_maps;
};

// The cache key of `desc`'s module for `arch`, of the variant
// resolve_variant (kernel_variants.hpp) makes of `variant`.
[[nodiscard]] Result<JitCacheKey> jit_module_key(const OpDescriptor& desc, const std::string& arch,
                                                 std::string_view variant = "");

// What compiling one descriptor's module takes: its key and its source.
struct JitModulePlan {
  JitCacheKey key;
  KernelSource source;
  std::string arch;
  std::string variant;  // kernel_variants.hpp's id
};

// Checks that the JIT serves `desc` on `arch` (UNSUPPORTED otherwise) and
// that NVRTC is there to name the key, then makes the key.
[[nodiscard]] Result<JitModulePlan> plan_jit_module(const OpDescriptor& desc,
                                                    const std::string& arch,
                                                    std::string_view variant = "");

// Compiles a plan with NVRTC.  `scratch` (a cache directory; may be empty)
// receives sources NVRTC rejects (jit/failed/) and its precompiled headers.
[[nodiscard]] Result<CacheEntry> compile_jit_module(const JitModulePlan& plan,
                                                    const std::string& scratch);

// plan, then get_or_compile.  Unsupported descriptors return UNSUPPORTED; compile errors carry NVRTC's
// log and the saved source under <writable cache>/jit/failed/.
[[nodiscard]] Result<PreparedModule> prepare_jit_module(JitCache& cache, const OpDescriptor& desc,
                                                        const std::string& arch,
                                                        std::string_view variant = "");

}  // namespace convjit
