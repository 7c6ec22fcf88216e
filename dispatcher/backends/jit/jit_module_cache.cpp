#include "dispatcher/backends/jit/jit_module_cache.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "dispatcher/backends/jit/embedded_templates.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/jit/nvrtc_compiler.hpp"
#include "dispatcher/backends/jit/nvrtc_library.hpp"
#include "dispatcher/backends/jit/pch_directory.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "version.hpp"

namespace convjit {

namespace {

JitKeyFields key_fields(const OpDescriptor& desc, const KernelSource& source,
                        const std::string& arch) {
  return {descriptor_name(desc), source.source,   std::string(embedded_templates_hash()),
          kVersionString,        nvrtc_version(), arch,
          nvrtc_options(arch)};
}

std::string metadata_json(const KernelSource& source, const CompiledModule& module,
                          const std::string& arch) {
  nlohmann::json entries = nlohmann::json::array();
  for (const KernelEntry& e : source.entries)
    entries.push_back({{"name", e.name},
                       {"threads", e.threads},
                       {"blocks", e.blocks()},
                       {"block_size", e.threads_per_block},
                       {"dynamic_shared_bytes", e.dynamic_shared_bytes},
                       {"cluster_blocks", e.cluster_blocks},
                       // Cut to the GPU's SMs; Stream-K's grid is its
                       // kernel's constant, whole on any GPU.
                       {"persistent", e.persistent_tiles > 0 && e.persistent_units == 0},
                       {"copies_filters", e.copies_filters}});
  return nlohmann::json{{"template", source.template_name},
                        {"variant", source.variant},
                        {"arch", arch},
                        {"entries", entries},
                        {"workspace_bytes", source.workspace_bytes},
                        {"zeroed_offset", source.zeroed_offset},
                        {"zeroed_bytes", source.zeroed_bytes},
                        {"registers", module.stats.max_registers},
                        {"spill_stores", module.stats.spill_stores},
                        {"spill_loads", module.stats.spill_loads},
                        {"compile_ms", module.compile_ms}}
      .dump();
}

}  // namespace

Result<JitCacheKey> jit_module_key(const OpDescriptor& desc, const std::string& arch,
                                   std::string_view variant) {
  auto chosen = resolve_variant(desc, arch, variant);
  if (!chosen.is_ok()) return chosen.status();
  auto source = kernel_source(desc, chosen.value());
  if (!source.is_ok()) return source.status();
  return make_jit_cache_key(key_fields(desc, source.value(), target_arch(source.value(), arch)));
}

Result<JitModulePlan> plan_jit_module(const OpDescriptor& desc, const std::string& arch,
                                      std::string_view variant) {
  if (!is_valid_arch(arch))
    return Status::invalid(fmt::format("arch '{}' is not of the form sm_XX (e.g. sm_90)", arch));
  if (Status s = jit_supports_arch(desc, arch); !s.is_ok()) return s;
  // The NVRTC version is part of every key: without NVRTC no entry can be named.
  if (const Status& nvrtc = NvrtcLibrary::instance().available(); !nvrtc.is_ok()) return nvrtc;
  if (Status s = jit_supports(desc); !s.is_ok()) return s;
  auto chosen = resolve_variant(desc, arch, variant);
  if (!chosen.is_ok()) return chosen.status();
  auto source = kernel_source(desc, chosen.value());
  if (!source.is_ok()) return source.status();
  const std::string target = target_arch(source.value(), arch);
  JitCacheKey key = make_jit_cache_key(key_fields(desc, source.value(), target));
  return JitModulePlan{std::move(key), std::move(source).value(), target, chosen.value()};
}

Result<CacheEntry> compile_jit_module(const JitModulePlan& plan, const std::string& scratch) {
  const std::string failed_dir =
      scratch.empty() ? "" : (std::filesystem::path(scratch) / "jit" / "failed").string();
  auto module = compile_kernel(plan.source, plan.arch, failed_dir, pch_directory(scratch));
  if (!module.is_ok()) return module.status();
  return CacheEntry{plan.key.preimage, metadata_json(plan.source, module.value(), plan.arch),
                    std::move(module.value().cubin)};
}

Result<PreparedModule> prepare_jit_module(JitCache& cache, const OpDescriptor& desc,
                                          const std::string& arch, std::string_view variant) {
  auto plan = plan_jit_module(desc, arch, variant);
  if (!plan.is_ok()) return plan.status();
  PreparedModule out;
  out.variant = plan.value().variant;
  out.tensor_maps = plan.value().source.tensor_maps;
  auto entry = cache.get_or_compile(
      plan.value().key,
      [&] { return compile_jit_module(plan.value(), cache.primary_directory()); }, &out.compiled);
  if (!entry.is_ok()) return entry.status();
  out.entry = std::move(entry).value();
  return out;
}

}  // namespace convjit
