// The JIT cache's tiers from the settings (DESIGN.md section 11): the
// node-local tier first, then the shared cache search path, whose one
// writer per job is rank 0.
#pragma once

#include "cache/jit_cache.hpp"
#include "dispatcher/settings.hpp"

namespace convjit {

// Whether this process publishes its compiles to the shared tier.  A
// process started by an MPI or Slurm launcher (OMPI_COMM_WORLD_RANK,
// PMIX_RANK, PMI_RANK, SLURM_PROCID) does only as rank 0, so that a
// thousand ranks missing the same kernel do not all write one shared
// directory; a process on its own always does.
[[nodiscard]] bool writes_shared_tier(EnvLookup lookup);

[[nodiscard]] JitCacheTiers jit_cache_tiers(const Settings& settings,
                                            EnvLookup lookup = process_environment);

}  // namespace convjit
