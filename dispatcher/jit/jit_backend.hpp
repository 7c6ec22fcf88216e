// The JIT backend: kernels specialised per descriptor, compiled with NVRTC
// for the device's exact architecture (or taken from the persistent cache)
// and launched through the CUDA driver API.
#pragma once

#include "backend.hpp"

namespace convjit {

class JitBackend final : public Backend {
 public:
  [[nodiscard]] std::string_view name() const override { return "jit"; }
  [[nodiscard]] Status check_support(const OpDescriptor& desc,
                                     const convjit_device_t& device) const override;
  [[nodiscard]] Result<std::unique_ptr<Kernel>> build(const OpDescriptor& desc,
                                                      const convjit_device_t& device,
                                                      BuildTrace& trace) override;
};

}  // namespace convjit
