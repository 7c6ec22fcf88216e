#include "analysis/gpu_spec.hpp"

#include <string>

namespace convjit::analysis {

namespace {

constexpr std::size_t KiB = 1024;

// Per-SM and per-block limits: the CUDA C++ Programming Guide's table
// "Technical Specifications per Compute Capability" (8.0 and 9.0), and
// NVIDIA's A100 and H100 tuning guides for the shared-memory carve-outs
// (A100: up to 164 KiB per SM, 163 KiB per block; H100: 228 and 227 KiB;
// 1 KiB per block reserved by the driver on both).  SM counts: the A100 and
// H100 SXM5 product briefs (108 and 132; the H200 is the H100's GH100 die).
constexpr GpuSpec kSpecs[] = {
    {"H100 SXM", "sm_90", 9, 0, 132, 64 * 1024, 64 * 1024, 2048, 1024, 228 * KiB, 48 * KiB,
     227 * KiB, 1 * KiB},
    {"H200", "sm_90", 9, 0, 132, 64 * 1024, 64 * 1024, 2048, 1024, 228 * KiB, 48 * KiB, 227 * KiB,
     1 * KiB},
    {"A100", "sm_80", 8, 0, 108, 64 * 1024, 64 * 1024, 2048, 1024, 164 * KiB, 48 * KiB,
     163 * KiB, 1 * KiB},
};

}  // namespace

std::span<const GpuSpec> gpu_specs() { return kSpecs; }

std::vector<const GpuSpec*> gpus_of_arch(std::string_view arch) {
  // sm_90a runs on the same GPUs as sm_90.
  if (arch.size() > 5 && arch.back() == 'a') arch.remove_suffix(1);
  std::vector<const GpuSpec*> gpus;
  for (const GpuSpec& spec : kSpecs)
    if (spec.arch == arch) gpus.push_back(&spec);
  return gpus;
}

const GpuSpec* gpu_spec_of_device(std::string_view device_name) {
  // H100 SXM and H200 share their compute; H200 has faster HBM3e.  The
  // PCIe H100 and the other A100s are different parts with lower limits.
  const auto has = [&](std::string_view part) {
    return device_name.find(part) != std::string_view::npos;
  };
  std::string_view row;
  if (has("H200")) row = "H200";
  if (has("H100") && !has("PCIe")) row = "H100 SXM";
  if (has("A100-SXM4-80GB")) row = "A100";
  for (const GpuSpec& gpu : kSpecs)
    if (gpu.name == row) return &gpu;
  return nullptr;
}

std::string modelled_archs() {
  std::string list;
  for (const GpuSpec& spec : kSpecs) {
    if (list.find(spec.arch) != std::string::npos) continue;
    list += list.empty() ? "" : ", ";
    list += spec.arch;
  }
  return list;
}

}  // namespace convjit::analysis
