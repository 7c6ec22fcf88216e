// Who does what for each key of a collective preload: the pure part of the
// protocol, computed alike on every rank from what they all gathered.
#pragma once

#include <string>
#include <vector>

namespace convjit {

enum class PreloadAction {
  none,     // every tier that needs it holds it (or the JIT does not serve it)
  send,     // `rank` holds it (rank 0 from the shared tier, a leader from its local one)
  compile,  // nobody holds it: `rank`, a node leader chosen by the key's hash, compiles it
};

struct KeyAssignment {
  PreloadAction action = PreloadAction::none;
  int rank = -1;
};

// What the tiers hold, one character per key: '1' held, '0' missing, '-'
// missing from a tier that cannot take it (no local tier, no writable
// shared directory), so that nothing is delivered to it.
struct PreloadHoldings {
  std::vector<int> leaders;        // node leaders, ascending; leaders[0] is rank 0
  std::vector<std::string> local;  // per leader, its node-local tier
  std::string shared;              // the shared tier, as rank 0 sees it
};

// `key_hashes[i]` is key i's hash (32 hex digits), or empty for a key the
// JIT does not serve.  Spreading compiles by hash keeps the split the same
// whatever order the ranks listed their descriptors in.
[[nodiscard]] std::vector<KeyAssignment> assign_preload_work(
    const std::vector<std::string>& key_hashes, const PreloadHoldings& holdings);

}  // namespace convjit
