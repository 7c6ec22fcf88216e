// Persisted choices of the `tuned` policy: which backend serves a
// descriptor on a device, measured once and then read by every later
// process (`tuned` and `auto`) without measuring again.
//
// One small JSON file per decision, in the first writable directory of the
// cache path:  <dir>/decisions/v1/<2 hex>/<hash>.json
// The key preimage (descriptor, GPU name and arch, cuDNN, NVRTC and convjit
// versions) is stored inside and compared on load, so a decision stands
// until one of them changes or the user clears it (`convjit cache clear`).
// Files are published atomically; a damaged or foreign file is a miss.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dispatcher/result.hpp"

namespace convjit {

struct TuningKeyFields {
  std::string descriptor;  // canonical name
  std::string device;      // GPU name, or "host"
  std::string arch;        // sm_XX, or empty on the host
  std::string cudnn_version;
  std::string nvrtc_version;
  std::string onednn;  // the host's: "2.6.3 avx512_core_bf16", or empty
  std::string convjit_version;
  std::string rules;  // hash of the rules that govern the call; empty when none do
};

struct TuningKey {
  std::string preimage;
  std::string relative_path;  // decisions/v1/<2 hex>/<hash>.json
};

[[nodiscard]] TuningKey make_tuning_key(const TuningKeyFields& fields);

struct TuningDecision {
  std::string backend;  // the winner's static name ("jit", "cudnn", ...)
  std::string variant;  // its KernelVariant::id ("algo1-fma"); "" for its only kernel
  std::string summary;  // what was measured, for the log
};

class TuningDecisions {
 public:
  explicit TuningDecisions(std::vector<std::string> search_path);

  // False when no directory of the search path holds decisions of this
  // layout: a cheap test that spares callers the key (which queries the
  // GPU and loads cuDNN) when nothing was ever tuned.
  [[nodiscard]] bool any_stored() const;

  // The stored decision from the first directory that has a valid one;
  // NOT_AVAILABLE when none does.
  [[nodiscard]] Result<TuningDecision> lookup(const TuningKey& key) const;

  // Publishes the decision in the first writable directory (NOT_AVAILABLE
  // when there is none: the decision then lives only in this process).
  // Lookups never create directories; this does, with mode 0700.
  [[nodiscard]] Status store(const TuningKey& key, const TuningDecision& decision) const;

  // Removes every decision (of any layout version) of the first writable
  // directory; returns how many.
  std::uint64_t clear() const;

 private:
  std::vector<std::string> search_path_;
};

}  // namespace convjit
