// The onednn backend: the host's vendor library, behind tuned libraries and
// in front of the reference.  It serves convolution in every direction,
// pooling, the bias gradient and resize through oneDNN 2.x (loaded at run
// time, onednn_library.hpp), with the primitives made once per descriptor
// in build() and run by an OnednnKernel (onednn_kernel.hpp); batchnorm runs
// on an OnednnBatchnormKernel (onednn_batchnorm.hpp).
//
// A convolution has two variants, both measured under `tuned`:
//   "strided" runs on the caller's layouts as they are;
//   "blocked" lets oneDNN choose its layouts (channel blocks of 8 or 16)
//     and reorders the operands into them and the result back.
// build() times both once on scratch operands and keeps the faster
// (onednn_backend.cpp says why); `tuned` stores its choice.
#pragma once

#include "dispatcher/backend.hpp"

namespace convjit {

class OnednnBackend final : public Backend {
 public:
  [[nodiscard]] std::string_view name() const override { return "onednn"; }
  [[nodiscard]] Status check_support(const OpDescriptor& desc,
                                     const convjit_device_t& device) const override;
  [[nodiscard]] Result<std::unique_ptr<Kernel>> build(const OpDescriptor& desc,
                                                      const convjit_device_t& device,
                                                      BuildTrace& trace) override;
  [[nodiscard]] Result<std::vector<KernelVariant>> build_variants(const OpDescriptor& desc,
                                                                  const convjit_device_t& device,
                                                                  BuildTrace& trace) override;
  [[nodiscard]] std::optional<std::vector<std::string>> variant_ids(
      const OpDescriptor& desc, const convjit_device_t& device) const override;
  [[nodiscard]] Result<std::unique_ptr<Kernel>> build_variant(const OpDescriptor& desc,
                                                              const convjit_device_t& device,
                                                              std::string_view id,
                                                              BuildTrace& trace) override;
};

// The convolution variants' ids, in the order build_variants makes them.
inline constexpr const char* kOnednnStridedVariant = "strided";
inline constexpr const char* kOnednnBlockedVariant = "blocked";

}  // namespace convjit
