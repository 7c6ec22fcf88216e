// Compile once per job (DESIGN.md section 11).  Every rank of a job calls
// collective_preload with the descriptors it needs; together they:
//   1. gather and deduplicate the descriptors;
//   2. see what each node-local tier and the shared tier already hold, and
//      split the compiles of what nobody holds across the node leaders by
//      key hash (preload_plan.hpp);
//   3. broadcast the compiled entries, and those a tier holds that another
//      lacks;
//   4. write them: each node leader its node-local tier, rank 0 alone the
//      shared tier (temp file + rename; no locks on shared storage);
//   5. check that every rank can load every entry from its node's tier.
// After each step the ranks agree on failure (Communicator::agree), so a
// rank that fails is named by all, and none waits for it forever.
// `convjit preload` runs it with a job of one when not under MPI.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cache/jit_cache.hpp"
#include "dispatcher/preload/communicator.hpp"

namespace convjit {

// How a descriptor's module is named and built: NVRTC in production, a
// stand-in in tests.
class PreloadCompiler {
 public:
  virtual ~PreloadCompiler() = default;
  // The key of `name`'s module; UNSUPPORTED when the JIT does not serve it.
  // Called once per name, on one thread, before any compile().
  [[nodiscard]] virtual Result<JitCacheKey> key(const std::string& name) = 0;
  // Builds the module of a name key() accepted; called from several threads.
  [[nodiscard]] virtual Result<CacheEntry> compile(const std::string& name) = 0;
};

// NVRTC for `arch`; `scratch` receives rejected sources and NVRTC's
// precompiled headers (jit_module_cache.hpp).
[[nodiscard]] std::unique_ptr<PreloadCompiler> nvrtc_preload_compiler(std::string arch,
                                                                      std::string scratch);

// Separates a work item's descriptor name from its variant: "name@variant".
inline constexpr char kPreloadVariantSeparator = '@';

struct PreloadRequest {
  // This rank's descriptors, in any order, repeats allowed; "name@variant"
  // asks for that JIT variant's module (kernel_variants.hpp), a plain name
  // for the auto policy's.
  std::vector<std::string> names;
  int jobs = 1;                    // compile threads on a node leader
  Status setup;  // a failure met before the protocol (an unreadable record file), told to all
};

// One compile, as it finishes, on the rank that ran it.
struct PreloadEvent {
  std::string name;
  bool ok = false;
  double ms = 0;
  std::string problem;  // when !ok
};

struct PreloadReport {
  int ranks = 1, nodes = 1;
  std::size_t requested = 0, distinct = 0;
  std::size_t compiled = 0, copied_from_shared = 0, copied_from_node = 0, cached = 0;
  std::size_t unsupported = 0, failed = 0;
  std::vector<std::string> problems;  // "name: why", for bad names and failed compiles
  std::vector<std::pair<int, std::size_t>> compiled_by_leader;  // (rank, compiles)
  std::size_t compiled_here = 0;
  std::size_t local_entries = 0;  // entries this rank loads from its node's tier
  std::string local_tier;         // this rank's node-local tier ("" when none)
  std::string shared_tier;        // the shared tier's writable directory, as rank 0 has it
  double seconds = 0;
};

// Collective over `comm`.  Returns the report on every rank, or, when any
// rank failed, EXECUTION_FAILED naming each failed rank on every rank.
// Failed compiles are not a rank's failure: they are in report.failed.
[[nodiscard]] Result<PreloadReport> collective_preload(
    const Communicator& comm, JitCache& cache, PreloadCompiler& compiler,
    const PreloadRequest& request, const std::function<void(const PreloadEvent&)>& on_compile = {});

}  // namespace convjit
