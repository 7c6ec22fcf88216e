#include "cache/code_trust.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

namespace convjit {

namespace {

Status check_not_shared(const std::string& path, const char* what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return Status::not_available(
        fmt::format("cannot stat {} {}: {}", what, path, std::strerror(errno)));
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
    return Status::not_available(
        fmt::format("refusing to load from {} {}: it is writable by other users (mode {:04o}); run "
                    "'chmod go-w {}'",
                    what, path, st.st_mode & 07777, path));
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    return Status::not_available(fmt::format(
        "refusing to load from {} {}: it is owned by uid {}, not by you (uid {}) or root; "
        "copy it into a cache directory you own",
        what, path, st.st_uid, ::geteuid()));
  return Status::ok();
}

// The resolved path, or empty with realpath's errno in *error.
std::string real_path(const std::string& path, int* error = nullptr) {
  std::unique_ptr<char, decltype(&std::free)> resolved(::realpath(path.c_str(), nullptr),
                                                       &std::free);
  if (!resolved && error) *error = errno;
  return resolved ? std::string(resolved.get()) : std::string();
}

}  // namespace

Status check_code_trust(const std::string& path) {
  const std::filesystem::path file(path);
  const std::string directory = file.has_parent_path() ? file.parent_path().string() : ".";
  if (Status s = check_not_shared(directory, "directory"); !s.is_ok()) return s;

  struct stat link {};
  if (::lstat(path.c_str(), &link) != 0)
    return Status::not_available(fmt::format("cannot stat {}: {}", path, std::strerror(errno)));
  std::string target = path;
  if (S_ISLNK(link.st_mode)) {
    int error = 0;
    target = real_path(path, &error);
    if (target.empty() && error == ELOOP)
      return Status::not_available(
          fmt::format("{} is a symlink loop; remove it or point it at a file", path));
    if (target.empty())
      return Status::not_available(fmt::format("{} is a dangling symlink ({}); remove it or fix "
                                               "its target",
                                               path, std::strerror(error)));
    const std::string target_directory = std::filesystem::path(target).parent_path().string();
    if (target_directory != real_path(directory))
      if (Status s = check_not_shared(target_directory, "directory"); !s.is_ok()) return s;
  }
  struct stat st {};
  if (::stat(target.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return Status::not_available(fmt::format("{} is not a regular file", target));
  return check_not_shared(target, "file");
}

Status check_directory_trust(const std::string& directory) {
  return check_not_shared(directory, "directory");
}

Status check_code_trust_below(const std::string& root, const std::string& path) {
  const std::filesystem::path base(root);
  const std::filesystem::path relative = std::filesystem::path(path).lexically_relative(base);
  if (relative.empty() || *relative.begin() == "..")
    return Status::not_available(
        fmt::format("{} is not below the cache directory {}", path, root));
  // The file's own directory is checked by check_code_trust.
  std::filesystem::path directory = base;
  for (auto part = relative.begin(); std::next(part) != relative.end(); ++part) {
    if (Status s = check_not_shared(directory.string(), "directory"); !s.is_ok()) return s;
    directory /= *part;
  }
  return check_code_trust(path);
}

}  // namespace convjit
