#include "dispatcher/libraries/library_search.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <link.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <string_view>

namespace convjit {

namespace {

namespace fs = std::filesystem;

std::string environment(EnvLookup lookup, const char* name) {
  const char* value = lookup(name);
  return value ? value : "";
}

bool is_directory_quietly(const fs::path& path) {
  std::error_code error;
  return fs::is_directory(path, error);
}

bool exists_quietly(const fs::path& path) {
  std::error_code error;
  return fs::exists(path, error);
}

// The sub-directories of `dir` whose names start with `prefix`, sorted so the
// search order does not depend on the file system's.
std::vector<fs::path> subdirectories(const fs::path& dir, std::string_view prefix) {
  std::vector<fs::path> out;
  std::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error))
    if (it->path().filename().string().starts_with(prefix) && is_directory_quietly(it->path()))
      out.push_back(it->path());
  std::sort(out.begin(), out.end());
  return out;
}

// The files among `dirs` × `spec.file_names`, the preferred file name first.
std::vector<std::string> files_in(const std::vector<fs::path>& dirs, const LibrarySpec& spec) {
  std::vector<std::string> files;
  for (const std::string& name : spec.file_names)
    for (const fs::path& dir : dirs)
      if (exists_quietly(dir / name)) files.push_back((dir / name).string());
  return files;
}

SearchPlace explicit_place(const LibrarySpec& spec, const std::string& value) {
  SearchPlace place{fmt::format("{}={}", spec.setting, value), {}, true};
  if (is_directory_quietly(value)) {
    place.files = files_in({fs::path(value)}, spec);
  } else {
    place.files.push_back(value);  // missing, or not a library: loading says which
  }
  return place;
}

// $root/lib64 and $root/lib, where a toolkit keeps its libraries; $root/bin
// for its programs.
SearchPlace toolkit_place(const LibrarySpec& spec, const std::string& where, const fs::path& root) {
  if (spec.executable) return {fmt::format("{} (bin)", where), files_in({root / "bin"}, spec)};
  return {fmt::format("{} (lib64, lib)", where), files_in({root / "lib64", root / "lib"}, spec)};
}

// NVIDIA's wheels under an environment prefix: <prefix>/lib*/python*/
// site-packages/nvidia/<package>/lib*/ (bin*/ for programs).  Any package
// and library folder name is accepted, since the cu12 and cu13 wheels lay
// them out differently.
SearchPlace wheel_place(const LibrarySpec& spec, const std::string& where,
                        const fs::path& prefix) {
  const std::string_view folder = spec.executable ? "bin" : "lib";
  std::vector<fs::path> dirs;
  for (const fs::path& lib : subdirectories(prefix, "lib"))
    for (const fs::path& python : subdirectories(lib, "python"))
      for (const fs::path& package : subdirectories(python / "site-packages" / "nvidia", ""))
        for (const fs::path& dir : subdirectories(package, folder)) dirs.push_back(dir);
  return {fmt::format("{} (site-packages/nvidia/*/{}*)", where, folder), files_in(dirs, spec)};
}

// The directories of $PATH holding one of the program's names.
SearchPlace path_place(const LibrarySpec& spec, EnvLookup lookup) {
  std::vector<fs::path> dirs;
  std::istringstream list(environment(lookup, "PATH"));
  for (std::string dir; std::getline(list, dir, ':');)
    if (!dir.empty()) dirs.push_back(dir);  // an empty entry (the current directory) is skipped
  return {"PATH", files_in(dirs, spec)};
}

// The file a handle came from: the path it was opened by, or for a bare file
// name the one the loader found.
std::string loaded_path(void* handle, const std::string& opened) {
  if (opened.find('/') != std::string::npos) return opened;
  link_map* map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name)
    return map->l_name;
  return opened;
}

// The explicit setting is searched alone.
bool is_explicit(const std::vector<SearchPlace>& places) {
  return places.size() == 1 && places.front().explicit_setting;
}

// What to do when nothing was loaded.
std::string remedy(const LibrarySpec& spec, const std::vector<SearchPlace>& places) {
  if (is_explicit(places))
    return fmt::format(
        "point {} at {} ({}) or the directory holding it, or unset it to search the usual places",
        spec.setting, spec.file_names.front(), spec.requirement);
  return fmt::format("install {}, or set {} to the library file or the directory holding it",
                     spec.requirement, spec.setting);
}

}  // namespace

std::vector<SearchPlace> library_search_places(const LibrarySpec& spec, EnvLookup lookup) {
  if (const std::string value = environment(lookup, spec.setting.c_str()); !value.empty())
    return {explicit_place(spec, value)};
  std::vector<SearchPlace> places{
      spec.executable
          ? path_place(spec, lookup)
          : SearchPlace{"the loader's default search (LD_LIBRARY_PATH, ld.so.cache)",
                        spec.file_names}};
  if (!spec.nvidia_places) return places;
  std::vector<fs::path> roots;
  const auto add_toolkit = [&](const std::string& where, const fs::path& root) {
    std::error_code error;
    const fs::path canonical = fs::weakly_canonical(root, error);
    if (std::find(roots.begin(), roots.end(), canonical) != roots.end()) return;
    roots.push_back(canonical);
    places.push_back(toolkit_place(spec, where, root));
  };
  for (const char* variable : {"CUDA_HOME", "CUDA_PATH"})
    if (const std::string root = environment(lookup, variable); !root.empty())
      add_toolkit(fmt::format("{}={}", variable, root), root);
  add_toolkit("/usr/local/cuda", "/usr/local/cuda");
  for (const char* variable : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const std::string prefix = environment(lookup, variable); !prefix.empty())
      places.push_back(wheel_place(spec, fmt::format("{}={}", variable, prefix), prefix));
  for (const std::string& prefix : spec.python_environments)
    places.push_back(wheel_place(spec, prefix, prefix));
  return places;
}

LoadedLibrary load_library(const LibrarySpec& spec, const std::vector<SearchPlace>& places,
                           const LibraryAcceptor& accept) {
  LoadedLibrary out;
  for (const SearchPlace& place : places) {
    if (place.files.empty())
      out.looked.push_back(
          fmt::format("{}: none of {} there", place.where, fmt::join(spec.file_names, ", ")));
    for (const std::string& file : place.files) {
      ::dlerror();  // clear any stale error
      void* handle = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        const char* error = ::dlerror();
        out.looked.push_back(
            fmt::format("{}: {}", place.where, error ? error : file + ": cannot be opened"));
        continue;
      }
      if (Status accepted = accept(handle); !accepted.is_ok()) {
        out.looked.push_back(fmt::format("{}: {}: {}", place.where, file, accepted.message()));
        ::dlclose(handle);
        continue;
      }
      out.handle = handle;
      out.path = loaded_path(handle, file);
      out.where = place.where;
      return out;
    }
  }
  out.remedy = remedy(spec, places);
  out.status = Status::not_available(
      is_explicit(places) ? fmt::format("{}; {}", fmt::join(out.looked, "; "), out.remedy)
                       : fmt::format("{} not found (looked in: {}); {}", spec.label,
                                     fmt::join(out.looked, "; "), out.remedy));
  return out;
}

void SearchedLibrary::search(const LibrarySpec& spec, const std::vector<SearchPlace>& places,
                             const LibraryAcceptor& accept) {
  loaded_ = load_library(spec, places, accept);
  if (!loaded_.status.is_ok()) version_.clear();
}

}  // namespace convjit
