// The cuDNN backend: the safety net behind the JIT on CUDA devices.  It
// serves convolution in every direction, pooling and the bias gradient
// through cuDNN 9 (loaded at run time), with cuDNN's descriptors made once
// per OpDescriptor and the algorithm chosen at build so that nothing about it
// can fail at execute (cudnn_algorithm.hpp): the heuristics' first that
// cuDNN confirms for the descriptors, that fits the workspace cap and whose
// workspace is allocated (or, under the `tuned` policy, the fastest).
//
// f32 never runs on TF32 tensor cores unless CONVJIT_ALLOW_TF32=1 (or
// convjit_set_allow_tf32) says so; f16 and bf16 use tensor cores with f32
// accumulation.
//
// A fused conv fwd runs as cuDNN's plain conv followed by the JIT's
// epilogue pass (epilogue_after.hpp), so it needs NVRTC as well.
#pragma once

#include "dispatcher/backend.hpp"
#include "dispatcher/backends/jit/jit_backend.hpp"

namespace convjit {

class CudnnBackend final : public Backend {
 public:
  [[nodiscard]] std::string_view name() const override { return "cudnn"; }
  [[nodiscard]] Status check_support(const OpDescriptor& desc,
                                     const convjit_device_t& device) const override;
  [[nodiscard]] Result<std::unique_ptr<Kernel>> build(const OpDescriptor& desc,
                                                      const convjit_device_t& device,
                                                      BuildTrace& trace) override;

  // A convolution's variants are the heuristics' usable algorithms, each
  // named by CudnnAlgorithm::id(); pooling and the bias have one.
  [[nodiscard]] Result<std::vector<KernelVariant>> build_variants(
      const OpDescriptor& desc, const convjit_device_t& device, BuildTrace& trace) override;
  [[nodiscard]] Result<std::unique_ptr<Kernel>> build_variant(const OpDescriptor& desc,
                                                              const convjit_device_t& device,
                                                              std::string_view id,
                                                              BuildTrace& trace) override;

 private:
  // `plain` (a kernel of the plain conv) followed by the epilogue pass.
  [[nodiscard]] Result<std::unique_ptr<Kernel>> with_epilogue_pass(
      const OpDescriptor& desc, const convjit_device_t& device, std::unique_ptr<Kernel> plain,
      BuildTrace& trace);

  JitBackend epilogue_passes_;  // compiles and caches the epilogue passes
};

}  // namespace convjit
