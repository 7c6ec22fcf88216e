// Compiles a KernelSource to a CUBIN for one exact architecture with NVRTC
// (no GPU or driver needed), with ptxas statistics from its log.  Without
// NVRTC, compile_kernel returns NVRTC's NOT_AVAILABLE status.
#pragma once

#include <string>
#include <vector>

#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

struct PtxasStats {
  int max_registers = 0;       // over the module's entries
  long long spill_stores = 0;  // bytes, summed over entries
  long long spill_loads = 0;
  long long stack_bytes = 0;
  long long shared_bytes = 0;  // static shared memory, the most of any entry
};

struct CompiledModule {
  std::vector<char> cubin;
  std::string ptx;  // what ptxas compiled: the static checks read its instructions
  std::string log;  // NVRTC's log, ptxas -v lines included
  PtxasStats stats;
  std::vector<std::string> options;  // as passed to NVRTC, but for --pch-dir
  double compile_ms = 0;
};

// "13.0"; "unavailable" without NVRTC (see jit/nvrtc_library.hpp).
[[nodiscard]] std::string nvrtc_version();

// What NVRTC compiles `source` for on a device of `device_arch`: its
// architecture-specific target (sm_90a for sm_90) where the source asks
// for it (KernelSource::arch_specific), else `device_arch`.
[[nodiscard]] std::string target_arch(const KernelSource& source, const std::string& device_arch);

// The NVRTC options for `arch` ("sm_90", "sm_90a", ...); part of every key.
[[nodiscard]] std::vector<std::string> nvrtc_options(const std::string& arch);

// On a compile error the status carries NVRTC's log, and the generated
// source is written to `failed_source_dir` (when not empty) for reading.
// NVRTC's automatic precompiled headers go to `pch_dir` when it is given
// (jit/pch_directory.hpp); it changes no binary, so it is not among the
// options a key holds.  The source is compiled for target_arch().
[[nodiscard]] Result<CompiledModule> compile_kernel(const KernelSource& source,
                                                    const std::string& device_arch,
                                                    const std::string& failed_source_dir = "",
                                                    const std::string& pch_dir = "");

// Parses the ptxas -v lines of an NVRTC log.
[[nodiscard]] PtxasStats parse_ptxas_stats(const std::string& log);

}  // namespace convjit
