// The GPUs `convjit analyze` models, with what an SM offers a kernel
// (registers, shared memory, warps, blocks) and the device's size.  Each
// figure names its source in gpu_spec.cpp; DESIGN.md sections 9 and 14
// hold the same.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace convjit::analysis {

struct GpuSpec {
  std::string_view name;  // "H100 SXM"
  std::string_view arch;  // "sm_90": what its kernels are compiled for
  int compute_major = 0, compute_minor = 0;
  int sms = 0;
  int registers_per_sm = 0;  // 32-bit
  int registers_per_block = 0;
  int max_threads_per_sm = 0;
  int max_threads_per_block = 0;
  std::size_t shared_per_sm = 0;          // what blocks may take, bytes
  std::size_t shared_per_block = 0;       // without opting in (static shared memory's limit)
  std::size_t shared_per_block_optin = 0;  // dynamic, after cuFuncSetAttribute
  std::size_t shared_reserved_per_block = 0;  // the driver's, counted against the SM
};

// Every GPU modelled, newest architecture first.
[[nodiscard]] std::span<const GpuSpec> gpu_specs();

// The GPUs of one architecture ("sm_90": H100 SXM and H200); empty for one
// not modelled.
[[nodiscard]] std::vector<const GpuSpec*> gpus_of_arch(std::string_view arch);

// The modelled GPU the driver names so ("NVIDIA H100 80GB HBM3"); null for
// one not modelled (a PCIe H100, an A100 other than SXM4 80GB).
[[nodiscard]] const GpuSpec* gpu_spec_of_device(std::string_view device_name);

// "sm_80, sm_90"
[[nodiscard]] std::string modelled_archs();

}  // namespace convjit::analysis
