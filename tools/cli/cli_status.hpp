// How CLI commands report failure, and the exit codes they map to:
// 0 success, 1 runtime failure, 2 usage (bad flags or values).
#pragma once

#include <functional>
#include <stdexcept>
#include <string>

namespace convjit::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRuntime = 1;
inline constexpr int kExitUsage = 2;

// Bad flags or flag values; the message names the flag and the fix.
class UsageError : public std::runtime_error {
 public:
  explicit UsageError(const std::string& message) : std::runtime_error(message) {}
};

// The command was well-formed but failed while running.
class RuntimeError : public std::runtime_error {
 public:
  explicit RuntimeError(const std::string& message) : std::runtime_error(message) {}
};

// Runs a command body and turns its exceptions into an exit code and one
// "convjit: error: ..." line on stderr.
int run_reporting_errors(const std::string& command, const std::function<int()>& body);

}  // namespace convjit::cli
