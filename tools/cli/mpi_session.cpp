#include "mpi_session.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "cli_status.hpp"
#include "companion_library.hpp"

namespace convjit::cli {

namespace {

constexpr const char* kLibrary = "libconvjit_mpi.so.0";

// CONVJIT_MPI_LIBRARY alone when set; else where the CLI's companion
// libraries are, then the loader's search.
std::vector<std::string> candidates() {
  if (const char* set = std::getenv("CONVJIT_MPI_LIBRARY"); set != nullptr && *set != '\0')
    return {set};
  std::vector<std::string> out;
  for (const auto& place : companion_library_places(kLibrary)) out.push_back(place.string());
  out.push_back(kLibrary);
  return out;
}

}  // namespace

MpiSession::MpiSession(int ranks_per_node) {
  std::vector<std::string> tried;
  for (const std::string& candidate : candidates()) {
    // RTLD_GLOBAL: Open MPI's own plugins resolve libmpi's symbols through it.
    library_ = ::dlopen(candidate.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (library_ != nullptr) break;
    tried.push_back(fmt::format("{} ({})", candidate, ::dlerror()));
  }
  if (library_ == nullptr)
    throw RuntimeError(fmt::format(
        "--mpi needs {}, which is built where CMake finds MPI (apt install libopenmpi-dev, then "
        "rebuild) or named by CONVJIT_MPI_LIBRARY; tried {}",
        kLibrary, fmt::join(tried, "; ")));
  using Init = int (*)(int, convjit_communicator_t*);
  auto init = reinterpret_cast<Init>(::dlsym(library_, "convjit_mpi_world_init"));
  finalize_ = reinterpret_cast<int (*)(convjit_communicator_t*)>(
      ::dlsym(library_, "convjit_mpi_world_finalize"));
  if (init == nullptr || finalize_ == nullptr)
    throw RuntimeError(fmt::format("{} lacks convjit_mpi_world_init or _finalize", kLibrary));
  if (const int rc = init(ranks_per_node, &comm_); rc != 0)
    throw RuntimeError(fmt::format("MPI could not start (MPI error {}); run under mpirun", rc));
}

MpiSession::~MpiSession() {
  if (finalize_ != nullptr && comm_.context != nullptr) finalize_(&comm_);
  // The library stays loaded: MPI may not be reloaded within a process.
}

}  // namespace convjit::cli
