// `convjit export --dace`: one library per convolution descriptor, in the
// DaCe ABI DiHydrogen's dispatcher loads (dace_shim.cpp), each pinned to the
// backend and variant chosen here and preloaded (its JIT kernel compiled
// into the cache), so that a rank's first call only loads.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "convjit/convjit.h"

namespace convjit {

struct DaceExportOptions {
  std::string directory;  // exists, owned by the user, not group/other-writable
  std::string shim_path;  // the DaCe shim for `device`
  std::string runpath_placeholder;  // in the shim, for the directory below
  std::string libconvjit_directory;  // where the copies find libconvjit.so.0
  convjit_device_kind_t device = CONVJIT_DEVICE_CUDA;
  std::string backend;                 // "" chooses under the policy setting
  bool symbolic_batch = false;         // concrete names get symbolic libraries
  std::optional<std::int64_t> batch;   // where symbolic libraries are chosen and preloaded
  bool force = false;                  // replace existing libraries
};

struct DaceExportOutcome {
  enum class Kind { written, kept, skipped, failed };
  Kind kind = Kind::failed;
  std::string library;  // lib<descriptor>.so, or the input name when skipped
  std::string detail;   // what serves it and why; or why it was kept, skipped or failed
};

// Exports each name in order; names that are not conv ops DiHydrogen can
// ask for (pooling, a dtype other than f32, asymmetric padding) are skipped
// with the reason.  `stop` (may be
// null) is polled between libraries: an interrupt ends the export after
// the library being written, never in the middle of one.
[[nodiscard]] std::vector<DaceExportOutcome> export_dace_libraries(
    const std::vector<std::string>& names, const DaceExportOptions& options,
    const std::atomic<bool>* stop = nullptr);

}  // namespace convjit
