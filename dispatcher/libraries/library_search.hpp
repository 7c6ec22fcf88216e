// Finding run-time libraries (NVRTC, cuDNN, oneDNN) without linking them,
// and NVIDIA's tools (nvdisasm) the same way,
// so libconvjit.so loads on a machine that has only a driver, or only a
// PyTorch install whose NVIDIA wheels carry them.
//
// The places, in order:
//   1. an explicit setting (CONVJIT_NVRTC_LIBRARY, CONVJIT_CUDNN_LIBRARY):
//      a file, or a directory holding one of the library's file names.  When
//      it is set, nothing else is searched: a wrong file is an error naming
//      it, never a silent substitute;
//   2. the loader's default search (LD_LIBRARY_PATH, RUNPATH, ld.so.cache);
//   3. the CUDA toolkit: $CUDA_HOME, $CUDA_PATH, /usr/local/cuda
//      (lib64/, lib/);
//   4. NVIDIA's Python wheels in the site-packages of an active environment
//      ($VIRTUAL_ENV, $CONDA_PREFIX): nvidia/*/lib*/<file name>, which
//      covers both the cu12 layout (nvidia/cuda_nvrtc/lib) and the cu13 one
//      (nvidia/cu13/lib).  No Python interpreter is started.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "convjit/status.hpp"
#include "dispatcher/settings.hpp"

namespace convjit {

// What is searched for.
struct LibrarySpec {
  std::string label;                    // "NVRTC"
  std::string setting;                  // "CONVJIT_NVRTC_LIBRARY"
  std::vector<std::string> file_names;  // preferred first: "libnvrtc.so.13", "libnvrtc.so.12"
  std::string requirement;              // "NVRTC 12.8 or later", for messages
  // Whether places 3 and 4 (the CUDA toolkit, NVIDIA's wheels) are searched:
  // not for libraries NVIDIA does not ship (oneDNN).
  bool nvidia_places = true;
  // A program (nvdisasm) is found in the same places, with PATH for the
  // loader's search and bin/ for the lib*/ folders.
  bool executable = false;
  // Python environments searched after $VIRTUAL_ENV and $CONDA_PREFIX, as
  // they are (the build's own, for a tool tools/setup installs there).
  std::vector<std::string> python_environments = {};
};

// One place looked at and the files to try there: absolute paths, or bare
// file names for the loader's default search.
struct SearchPlace {
  std::string where;  // "CUDA_HOME=/opt/cuda (lib64)", for doctor and messages
  std::vector<std::string> files;
  bool explicit_setting = false;
};

// The places for `spec`, in search order, under `lookup`'s environment.
// Places that hold none of the file names are listed with no files, so a
// report can say that they were looked at.
[[nodiscard]] std::vector<SearchPlace> library_search_places(const LibrarySpec& spec,
                                                             EnvLookup lookup);

// Checks an opened library (its version, its symbols) and fills the caller's
// API table from it; a non-OK status rejects it and the search goes on.
using LibraryAcceptor = std::function<Status(void* handle)>;

struct LoadedLibrary {
  void* handle = nullptr;            // kept open until exit by the caller
  std::string path;                  // the file loaded
  std::string where;                 // the place that found it
  std::vector<std::string> looked;   // "place: file: why not", every miss in order
  std::string remedy;                // what to do, when nothing was loaded
  Status status;                     // OK, or NOT_AVAILABLE: the misses and the remedy
};

// Opens the first file, place by place, that `accept` accepts.
[[nodiscard]] LoadedLibrary load_library(const LibrarySpec& spec,
                                         const std::vector<SearchPlace>& places,
                                         const LibraryAcceptor& accept);

// What NVRTC's and cuDNN's loaders share: the search, where the library came
// from, and its version.  A derived class fills its API table and version_
// in the acceptor it passes to search(), and clears the table when the
// search fails.
class SearchedLibrary {
 public:
  // OK, or NOT_AVAILABLE saying why and where it looked.
  [[nodiscard]] const Status& available() const { return loaded_.status; }
  // Where it came from, or every place looked at (for `convjit doctor`).
  [[nodiscard]] const LoadedLibrary& origin() const { return loaded_; }
  // "13.0", "9.19.0"; empty when the library is not available.
  [[nodiscard]] const std::string& version() const { return version_; }

 protected:
  // Called from the derived constructor's body, once its members exist.
  void search(const LibrarySpec& spec, const std::vector<SearchPlace>& places,
              const LibraryAcceptor& accept);

  std::string version_;

 private:
  LoadedLibrary loaded_;
};

}  // namespace convjit
