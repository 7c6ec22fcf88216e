#include "companion_library.hpp"

namespace convjit::cli {

std::vector<std::filesystem::path> companion_library_places(const std::string& file) {
  std::vector<std::filesystem::path> places;
  std::error_code error;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", error).parent_path();
  if (!error) {
    places.push_back(exe / file);
    places.push_back(exe.parent_path() / "lib" / file);
  }
  places.push_back(std::filesystem::path(CONVJIT_INSTALL_LIBDIR) / file);
  return places;
}

}  // namespace convjit::cli
