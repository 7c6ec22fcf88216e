// The CUDA source of one descriptor's kernel: a generated prelude that
// fixes every shape, stride and parameter as a constexpr member of
// `Problem`, followed by an #include of the op's template.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "op_descriptor.hpp"
#include "result.hpp"

namespace convjit {

inline constexpr int kJitThreadsPerBlock = 256;

struct KernelEntry {
  std::string name;       // extern "C" symbol in the module
  long long threads = 0;  // work items; the grid covers them (grid-stride beyond a cap)
  [[nodiscard]] unsigned blocks() const;
};

struct KernelSource {
  std::string template_name;         // e.g. "conv_fwd.cuh"
  std::string source;                // prelude + #include
  std::vector<KernelEntry> entries;  // launched in order
  std::size_t workspace_bytes = 0;   // f32 scratch shared by the entries
};

// Why the JIT cannot serve `desc`, or OK.
[[nodiscard]] Status jit_supports(const OpDescriptor& desc);

// The kernel source for a supported descriptor.
[[nodiscard]] Result<KernelSource> kernel_source(const OpDescriptor& desc);

}  // namespace convjit
