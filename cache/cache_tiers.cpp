#include "cache/cache_tiers.hpp"

#include <string_view>

namespace convjit {

bool writes_shared_tier(EnvLookup lookup) {
  for (const char* rank : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"})
    if (const char* value = lookup(rank); value != nullptr && *value != '\0')
      return std::string_view(value) == "0";
  return true;
}

JitCacheTiers jit_cache_tiers(const Settings& settings, EnvLookup lookup) {
  return {settings.local_cache_path.value, settings.cache_path.value, writes_shared_tier(lookup)};
}

}  // namespace convjit
