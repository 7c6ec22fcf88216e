// The CUDA source of one descriptor's kernel: a generated prelude that
// fixes every shape, stride and parameter as a constexpr member of
// `Problem`, followed by an #include of the op's template.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/result.hpp"
#include "dispatcher/tensor_maps/tensor_map_argument.hpp"

namespace convjit {

// Every entry runs in blocks of this many threads (Problem::BLOCK), on the
// GPU and in the emulator alike.
inline constexpr int kJitThreadsPerBlock = 256;

struct KernelEntry {
  std::string name;       // extern "C" symbol in the module
  long long threads = 0;  // work items; the grid covers them (grid-stride beyond a cap)
  long long tiles = 0;  // when not 0: exactly this many blocks, one per output tile (or persistent)
  // Its CONVJIT_DYNAMIC_SHARED_ARRAY's bytes (kernel_abi.cuh): the launch's
  // dynamic shared memory, opted into beyond 48 KiB when the module loads.
  std::size_t dynamic_shared_bytes = 0;
  // The block's threads: kJitThreadsPerBlock but where a template declares
  // its own (a Hopper conv of two consumer warpgroups: 384).
  unsigned threads_per_block = kJitThreadsPerBlock;
  // A persistent grid's (`tiles` blocks) output tiles, which its blocks
  // take in turn: the analyser's measure of its balance; 0 otherwise.
  long long persistent_tiles = 0;
  // With Stream-K, the tiles' K steps, which its blocks share evenly (a
  // block's units: parts of tiles): its balance then; 0 otherwise.
  long long persistent_units = 0;
  // Blocks a cluster (common/cluster.cuh), consecutive in the grid, which
  // blocks() must be a multiple of; 1: no clusters.
  unsigned cluster_blocks = 1;
  // The first pass that copies w alone into the workspace's first bytes
  // (filter_copy.hpp), which a call that promises w unchanged skips
  // (packed_filter_copies.hpp).
  bool copies_filters = false;
  [[nodiscard]] unsigned blocks() const;
};

// Shared memory a block may have on sm_90 (H100, H200): 48 KiB of it
// static, 227 KiB in all once a kernel opts in
// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
inline constexpr std::size_t kStaticSharedLimit = 48 * 1024;
inline constexpr std::size_t kOptInSharedLimit = 227 * 1024;

// One member of the prelude's `struct Problem`.
struct ProblemConstant {
  std::string name;  // e.g. "XS1"
  long long value;
};

struct KernelSource {
  std::string variant;                     // "direct", or a GEMM tile ("tc128x64")
  std::string template_name;               // e.g. "conv/conv_fwd.cuh"
  std::string source;                      // prelude + #include
  std::vector<ProblemConstant> constants;  // the prelude's Problem, in order
  std::vector<KernelEntry> entries;        // launched in order
  std::size_t workspace_bytes = 0;         // scratch shared by the entries
  // Workspace bytes from zeroed_offset that every launch must find zero
  // and leaves zero (Stream-K's counters): a kernel's own workspace starts
  // zeroed; a caller's the JIT zeroes before the launch.
  std::size_t zeroed_offset = 0, zeroed_bytes = 0;
  // The TMA maps the entries take after the workspace, in place of the
  // epilogue's operands (kernel_abi.cuh), bound to each call's pointers.
  std::vector<TensorMapArgument> tensor_maps;  // at most kMaxTensorMaps
  // wgmma or setmaxnreg: compiled for the architecture-specific target
  // (sm_90a), which runs on that architecture alone.
  bool arch_specific = false;
};

// The text NVRTC compiles for `source`: a prelude fixing CONVJIT_DTYPE,
// `defines` (whole #define lines) and source.constants as Problem's
// members, then an #include of source.template_name.
[[nodiscard]] std::string kernel_text(const KernelSource& source, DataType dtype,
                                      std::string_view defines = "");

// Why the JIT cannot serve `desc`, or OK.
[[nodiscard]] Status jit_supports(const OpDescriptor& desc);

// Whether the templates can be compiled for `arch` (a valid sm_XX): bf16
// needs sm_80 or newer, for cvt.rn.bf16.f32.
[[nodiscard]] Status jit_supports_arch(const OpDescriptor& desc, const std::string& arch);

// The kernel source of one variant (kernel_variants.hpp) for a supported
// descriptor; "" is the heuristic's choice under the current settings.  An
// explicit variant need only fit the descriptor: TF32 tiles for f32 are
// built whatever CONVJIT_ALLOW_TF32 says, since the backends decide that.
[[nodiscard]] Result<KernelSource> kernel_source(const OpDescriptor& desc,
                                                 std::string_view variant = "");

}  // namespace convjit
