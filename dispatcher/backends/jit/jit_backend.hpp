// The JIT backend: kernels specialised per descriptor, compiled with NVRTC
// for the device's exact architecture (or taken from the persistent cache)
// and launched through the CUDA driver API.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cache/jit_cache.hpp"
#include "dispatcher/backend.hpp"

namespace convjit {

class JitBackend final : public Backend {
 public:
  [[nodiscard]] std::string_view name() const override { return "jit"; }
  [[nodiscard]] Status check_support(const OpDescriptor& desc,
                                     const convjit_device_t& device) const override;
  [[nodiscard]] Result<std::unique_ptr<Kernel>> build(const OpDescriptor& desc,
                                                      const convjit_device_t& device,
                                                      BuildTrace& trace) override;
  // Every variant of kernel_variants.hpp that serves the descriptor on the device.
  [[nodiscard]] Result<std::vector<KernelVariant>> build_variants(const OpDescriptor& desc,
                                                                  const convjit_device_t& device,
                                                                  BuildTrace& trace) override;
  [[nodiscard]] std::optional<std::vector<std::string>> variant_ids(
      const OpDescriptor& desc, const convjit_device_t& device) const override;
  [[nodiscard]] Result<std::unique_ptr<Kernel>> build_variant(const OpDescriptor& desc,
                                                              const convjit_device_t& device,
                                                              std::string_view id,
                                                              BuildTrace& trace) override;

 private:
  // The cache of the current search path, opened once per path (opening
  // probes and creates directories); builds share it and may outlive a
  // change of the path.
  [[nodiscard]] std::shared_ptr<JitCache> cache_for_settings();

  std::mutex cache_mutex_;  // guards the three below; held only to swap them
  std::vector<std::string> cache_path_;
  std::string local_cache_path_;
  std::shared_ptr<JitCache> cache_;
};

}  // namespace convjit
