// One descriptor's JIT variant, compiled for a GPU architecture and taken
// apart without a GPU: per kernel entry, its launch, what ptxas says it
// takes from an SM, the occupancy that gives on each GPU of that
// architecture, and the instruction mix of its SASS (when nvdisasm is at
// hand).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/disassembler.hpp"
#include "analysis/entry_resources.hpp"
#include "analysis/gpu_spec.hpp"
#include "analysis/instruction_mix.hpp"
#include "analysis/occupancy.hpp"
#include "dispatcher/backends/emulator/memory_counters.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"

namespace convjit::analysis {

struct GpuOccupancy {
  const GpuSpec* gpu = nullptr;
  Result<Occupancy> occupancy = Status::not_available("not computed");
};

struct EntryAnalysis {
  KernelEntry launch;
  EntryResources resources;
  std::vector<GpuOccupancy> occupancy;  // one per GPU of the architecture
  std::optional<InstructionMix> mix;
  std::optional<emulator::KernelMemoryCounters> memory;
};

struct VariantAnalysis {
  std::string variant;
  std::string template_name;
  std::vector<EntryAnalysis> entries;
  std::string mix_missing;     // why there is no instruction mix, when there is none
  std::string memory_missing;  // why there are no memory counters, when there are none
};

// The blocks per kernel `convjit analyze` and `bench --predict` count by
// default: the first, the last and one between.
inline constexpr unsigned kDefaultSampledBlocks = 3;

// Without a disassembler there is no instruction mix, and mix_missing says
// why.  The memory counters come from the emulator on at most
// `sampled_blocks` blocks per kernel (count_variant_memory); 0 leaves them
// out.  NOT_AVAILABLE without NVRTC or for an architecture no GPU models.
[[nodiscard]] Result<VariantAnalysis> analyze_variant(const OpDescriptor& desc,
                                                      const std::string& arch,
                                                      const std::string& variant,
                                                      const Result<Disassembler>& disassembler,
                                                      unsigned sampled_blocks);

}  // namespace convjit::analysis
