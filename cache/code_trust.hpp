// A cache directory holds code that convjit will run (tuned libraries, JIT
// cubins), so a file is only loaded when no other user could have written
// it: neither the file nor its directory may be group- or world-writable or
// owned by another user (root excepted).  A symlink may point elsewhere
// only if its target passes the same checks.
#pragma once

#include <string>

#include "convjit/status.hpp"

namespace convjit {

// OK if `path` (an existing file) may be loaded; otherwise a status whose
// message names the offending path and the fix.
[[nodiscard]] Status check_code_trust(const std::string& path);

// OK if `directory` (existing) may hold code convjit loads: the checks a
// loaded file's directory passes.
[[nodiscard]] Status check_directory_trust(const std::string& directory);

// The same for a file that sits below the cache directory `root` (a JIT
// cubin, jit/v1/.../<hash>.cjit): every directory from `root` down to the
// file must pass too, since whoever can write one of them can replace
// everything below it.
[[nodiscard]] Status check_code_trust_below(const std::string& root, const std::string& path);

}  // namespace convjit
