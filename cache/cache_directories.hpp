// The cache search path's directories: created 0700 (a cache holds code
// and decisions about which code runs), and the first writable one chosen
// for writes while read-only ones are still searched.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "convjit/status.hpp"

namespace convjit {

// Creates `dir` and its missing parents with mode 0700; false on failure.
[[nodiscard]] bool make_private_directories(const std::filesystem::path& dir);

// The node-local tier: creates `dir` like make_private_directories, then
// checks that it is a directory of this user that no one else can write
// (it will hold code, often under a world-writable /dev/shm or $TMPDIR);
// otherwise the status names the path and the fix.
[[nodiscard]] Status prepare_local_tier(const std::string& dir);

// The first directory of `search_path` that exists or can be created and is
// writable; empty when there is none.
[[nodiscard]] std::string first_writable_directory(const std::vector<std::string>& search_path);

}  // namespace convjit
