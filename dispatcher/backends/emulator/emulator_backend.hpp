// The emulator as a dispatch backend: CONVJIT_POLICY=emulate (or
// convjit_set_policy("emulate")) runs every host call through the JIT's
// kernel templates on the host emulator instead of the reference.  A
// testing and debugging tool, never chosen by the automatic policy: it
// copies the operands and checks every access, so it is slow and its
// calls allocate.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "dispatcher/backend.hpp"
#include "dispatcher/backends/emulator/memory_counters.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"

namespace convjit {

class EmulatorBackend final : public Backend {
 public:
  [[nodiscard]] std::string_view name() const override { return "emulator"; }
  [[nodiscard]] Status check_support(const OpDescriptor& desc,
                                     const convjit_device_t& device) const override;
  [[nodiscard]] Result<std::unique_ptr<Kernel>> build(const OpDescriptor& desc,
                                                      const convjit_device_t& device,
                                                      BuildTrace& trace) override;
  // Every JIT variant (kernel_variants.hpp), as on an sm_80+ GPU.
  [[nodiscard]] Result<std::vector<KernelVariant>> build_variants(const OpDescriptor& desc,
                                                                  const convjit_device_t& device,
                                                                  BuildTrace& trace) override;
  [[nodiscard]] Result<std::unique_ptr<Kernel>> build_variant(const OpDescriptor& desc,
                                                              const convjit_device_t& device,
                                                              std::string_view id,
                                                              BuildTrace& trace) override;
};

// `source` (a kernel_source, its launch perhaps changed: a test's
// persistent grid of fewer blocks than an SM count, so that each takes
// several tiles) run in the emulator as build_variant runs a variant's.
[[nodiscard]] Result<std::unique_ptr<Kernel>> emulate_kernel_source(const OpDescriptor& desc,
                                                                    KernelSource source);

// The memory counters of JIT variant `variant` (an id kernel_source
// takes) of `desc`, per kernel entry: its kernels run in the emulator on
// at most `sampled` blocks each (count_memory in kernel_emulator.hpp), on
// zero-filled host tensors of the descriptor's shapes, each starting on a
// 256-byte boundary as a cudaMalloc'd one does.  NOT_AVAILABLE, saying
// so, when the emulator's copies would take more than 6 GB.
[[nodiscard]] Result<std::vector<emulator::KernelMemoryCounters>> count_variant_memory(
    const OpDescriptor& desc, std::string_view variant, unsigned sampled);

}  // namespace convjit
