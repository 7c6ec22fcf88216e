// The first step of the dispatch chain: a tuned lib<descriptor>.so found in
// the cache search path.  Each directory is probed in order for the
// concrete name, then the symbolic-batch name; the first library that loads
// and passes every check wins.  A rejected library is reported with its
// reason and probing moves on.  A library's variant id is its path: a rule
// can deny one, or force one from anywhere.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dispatcher/backend.hpp"
#include "dispatcher/backends/tuned/tuned_kernel_common.hpp"

namespace convjit {

// The files probed for `desc` (concrete), in order.
[[nodiscard]] std::vector<TunedCandidate> tuned_library_candidates(
    const OpDescriptor& desc, const std::vector<std::string>& search_path);

struct ProbeStep {
  TunedCandidate candidate;
  bool exists = false;
  std::string outcome;  // "not found", "rejected: ...", "loaded (DaCe ABI)", "would load"
};

struct ProbeReport {
  std::vector<ProbeStep> steps;
  std::unique_ptr<Kernel> kernel;  // set when a library was loaded
  [[nodiscard]] std::string summary() const;
};

enum class ProbeMode {
  load,     // load and initialise the first acceptable library
  dry_run,  // only check existence and trust; run no library code
};

[[nodiscard]] ProbeReport probe_tuned_libraries(const OpDescriptor& desc,
                                                const convjit_device_t& device,
                                                const std::vector<std::string>& search_path,
                                                ProbeMode mode);

class TunedLibraryBackend final : public Backend {
 public:
  [[nodiscard]] std::string_view name() const override { return "tuned-library"; }
  [[nodiscard]] Status check_support(const OpDescriptor& desc,
                                     const convjit_device_t& device) const override;
  [[nodiscard]] Result<std::unique_ptr<Kernel>> build(const OpDescriptor& desc,
                                                      const convjit_device_t& device,
                                                      BuildTrace& trace) override;
  // The libraries present in the search path, in probe order.
  [[nodiscard]] std::optional<std::vector<std::string>> variant_ids(
      const OpDescriptor& desc, const convjit_device_t& device) const override;
  // The library at the path `id` (checked and loaded as a probed one); its
  // file name says whether it is the concrete or the symbolic-batch library.
  [[nodiscard]] Result<std::unique_ptr<Kernel>> build_variant(const OpDescriptor& desc,
                                                              const convjit_device_t& device,
                                                              std::string_view id,
                                                              BuildTrace& trace) override;
};

}  // namespace convjit
