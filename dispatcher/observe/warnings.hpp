// convjit's warnings on stderr ("convjit: warning: ..."), for problems that
// must not fail an operation (a bad setting, an unwritable record file, a
// damaged cache entry) but that the user should see even with logging off.
#pragma once

#include <string>

namespace convjit {

void warn(const std::string& message);

// Each distinct message once per process.
void warn_once(const std::string& message);

}  // namespace convjit
