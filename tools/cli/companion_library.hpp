// Where the CLI finds a library shipped with it (libconvjit_mpi, the DaCe
// shims): beside the executable (the build tree), in ../lib beside its
// directory (an install moved as a whole), then the install's library
// directory as configured.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace convjit::cli {

[[nodiscard]] std::vector<std::filesystem::path> companion_library_places(const std::string& file);

}  // namespace convjit::cli
