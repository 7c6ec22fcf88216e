#include "analysis/kernel_analysis.hpp"

#include <fmt/format.h>

#include "dispatcher/backends/emulator/emulator_backend.hpp"
#include "dispatcher/backends/jit/nvrtc_compiler.hpp"

namespace convjit::analysis {

namespace {

std::optional<InstructionMix> mix_of(const std::vector<SassFunction>& functions,
                                     const std::string& entry) {
  for (const SassFunction& f : functions)
    if (f.name == entry) return instruction_mix(f);
  return std::nullopt;
}

}  // namespace

Result<VariantAnalysis> analyze_variant(const OpDescriptor& desc, const std::string& arch,
                                        const std::string& variant,
                                        const Result<Disassembler>& disassembler,
                                        unsigned sampled_blocks) {
  const std::vector<const GpuSpec*> gpus = gpus_of_arch(arch);
  if (gpus.empty())
    return Status::not_available(
        fmt::format("no GPU of {} is modelled; give one of {}", arch, modelled_archs()));
  auto source = kernel_source(desc, variant);
  if (!source.is_ok()) return source.status();
  auto module = compile_kernel(source.value(), arch);
  if (!module.is_ok()) return module.status();
  VariantAnalysis out{source.value().variant, source.value().template_name, {}, "", ""};
  std::vector<SassFunction> sass;
  if (!disassembler.is_ok()) {
    out.mix_missing = disassembler.status().message();
  } else if (auto listing = disassemble(disassembler.value(), module.value().cubin);
             listing.is_ok()) {
    sass = parse_sass(listing.value());
  } else {
    out.mix_missing = listing.status().message();
  }
  const std::vector<EntryResources> resources = parse_entry_resources(module.value().log);
  std::vector<emulator::KernelMemoryCounters> memory;
  if (sampled_blocks == 0) {
    out.memory_missing = "not asked for";
  } else if (auto counted = count_variant_memory(desc, out.variant, sampled_blocks);
             counted.is_ok()) {
    memory = std::move(counted).value();
  } else {
    out.memory_missing = counted.status().message();
  }
  for (const KernelEntry& launch : source.value().entries) {
    EntryAnalysis entry{launch, {.name = launch.name, .arch = arch}, {}, mix_of(sass, launch.name),
                        std::nullopt};
    for (const EntryResources& r : resources)
      if (r.name == launch.name) entry.resources = r;
    for (const GpuSpec* gpu : gpus)
      entry.occupancy.push_back({gpu, occupancy(*gpu, entry.resources, launch.threads_per_block,
                                                launch.dynamic_shared_bytes)});
    if (out.entries.size() < memory.size()) entry.memory = memory[out.entries.size()];
    out.entries.push_back(std::move(entry));
  }
  return out;
}

}  // namespace convjit::analysis
