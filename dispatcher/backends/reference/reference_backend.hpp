// The host reference as a dispatch backend: always available on the host
// device, serves every valid descriptor, never runs on a GPU.
#pragma once

#include "dispatcher/backend.hpp"

namespace convjit {

class ReferenceBackend final : public Backend {
 public:
  [[nodiscard]] std::string_view name() const override { return "reference"; }
  [[nodiscard]] Status check_support(const OpDescriptor& desc,
                                     const convjit_device_t& device) const override;
  [[nodiscard]] Result<std::unique_ptr<Kernel>> build(const OpDescriptor& desc,
                                                      const convjit_device_t& device,
                                                      BuildTrace& trace) override;
};

// Runs a validated, concrete descriptor on host buffers with the reference,
// whatever the dispatch policy: how other backends' results are checked.
void run_reference(const OpDescriptor& desc, const ExecArgs& args);

}  // namespace convjit
