// A cache directory holds code that convjit will run, so a library is only
// loaded when no other user could have written it: neither the file nor its
// directory may be group- or world-writable or owned by another user (root
// excepted).  A symlink may point elsewhere only if its target passes the
// same checks.
#pragma once

#include <string>

#include "convjit/status.hpp"

namespace convjit {

// OK if `path` (an existing file) may be loaded; otherwise a status whose
// message names the offending path and the fix.
[[nodiscard]] Status check_library_trust(const std::string& path);

}  // namespace convjit
