#include "cache/cache_directories.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

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

Status prepare_local_tier(const std::string& dir) {
  if (!make_private_directories(dir))
    return Status::not_available(
        fmt::format("cannot create {}: {}; set CONVJIT_LOCAL_CACHE_PATH to a directory you own, "
                    "or to none",
                    dir, std::strerror(errno)));
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return Status::not_available(fmt::format("{} is not a directory", dir));
  if (st.st_uid != ::geteuid())
    return Status::not_available(fmt::format(
        "{} belongs to uid {}, not to this user; remove it or set CONVJIT_LOCAL_CACHE_PATH", dir,
        st.st_uid));
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return Status::not_available(
        fmt::format("{} is writable by other users; chmod go-w {}", dir, dir));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    return Status::not_available(fmt::format("{} is not writable: {}", dir, std::strerror(errno)));
  return Status::ok();
}

std::string first_writable_directory(const std::vector<std::string>& search_path) {
  for (const std::string& dir : search_path)
    if (make_private_directories(dir) && ::access(dir.c_str(), W_OK | X_OK) == 0) return dir;
  return {};
}

}  // namespace convjit
