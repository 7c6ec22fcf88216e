#include "cache/cache_directories.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace convjit {

namespace fs = std::filesystem;

bool make_private_directories(const fs::path& dir) {
  std::error_code error;
  if (fs::is_directory(dir, error)) return true;
  if (dir.has_parent_path() && dir.parent_path() != dir &&
      !make_private_directories(dir.parent_path()))
    return false;
  return ::mkdir(dir.c_str(), 0700) == 0 || errno == EEXIST;
}

std::string first_writable_directory(const std::vector<std::string>& search_path) {
  for (const std::string& dir : search_path)
    if (make_private_directories(dir) && ::access(dir.c_str(), W_OK | X_OK) == 0) return dir;
  return {};
}

}  // namespace convjit
