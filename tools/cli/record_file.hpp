// Reading a record file (CONVJIT_RECORD's JSON lines) back: the commands
// that act on what a run needed (preload, export).
#pragma once

#include <string>
#include <vector>

namespace convjit::cli {

// The descriptor names of a record file, in order; lines that hold no valid
// name go to `problems` ("<file>:<line>: <why>").  Throws UsageError for a
// directory and RuntimeError for a file that cannot be read or is empty.
[[nodiscard]] std::vector<std::string> read_record_file(const std::string& path,
                                                        std::vector<std::string>& problems);

}  // namespace convjit::cli
