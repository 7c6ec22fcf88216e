// Where NVRTC's automatic precompiled headers go.  By default NVRTC writes
// them under /tmp/__nvrtc_auto_pch_<pid>_<n> and removes them at a normal
// exit, so every killed process leaves about 7 MB behind.  convjit points
// NVRTC (--pch-dir) at <cache>/jit/pch/<pid>/ instead, and the first
// compile of a process removes the folders of processes that are gone.
#pragma once

#include <string>

namespace convjit {

// <cache_dir>/jit/pch/<this pid>, created (0700); empty when it cannot be.
// The first call for a cache directory removes its stale siblings.
[[nodiscard]] std::string pch_directory(const std::string& cache_dir);

}  // namespace convjit
