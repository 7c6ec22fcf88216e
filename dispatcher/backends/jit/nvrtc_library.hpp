// NVRTC, loaded at run time with dlopen (found as cuda/library_search.hpp
// says), so libconvjit.so loads where NVRTC is missing; there, available()
// says why and the JIT backend declines with that reason.
#pragma once

#include <nvrtc.h>

#include <string>
#include <vector>

#include "convjit/status.hpp"
#include "dispatcher/libraries/library_search.hpp"

namespace convjit {

struct NvrtcApi {
  decltype(&::nvrtcVersion) version = nullptr;
  decltype(&::nvrtcGetErrorString) get_error_string = nullptr;
  decltype(&::nvrtcCreateProgram) create_program = nullptr;
  decltype(&::nvrtcDestroyProgram) destroy_program = nullptr;
  decltype(&::nvrtcCompileProgram) compile_program = nullptr;
  decltype(&::nvrtcGetProgramLogSize) get_program_log_size = nullptr;
  decltype(&::nvrtcGetProgramLog) get_program_log = nullptr;
  decltype(&::nvrtcGetCUBINSize) get_cubin_size = nullptr;
  decltype(&::nvrtcGetCUBIN) get_cubin = nullptr;
  decltype(&::nvrtcGetPTXSize) get_ptx_size = nullptr;
  decltype(&::nvrtcGetPTX) get_ptx = nullptr;
};

class NvrtcLibrary : public SearchedLibrary {
 public:
  // Found and loaded once per process, under the process's environment.
  static const NvrtcLibrary& instance();

  // Searches `places` (tests pass their own).
  explicit NvrtcLibrary(const std::vector<SearchPlace>& places);

  // What is searched for: libnvrtc.so.13, then .12, of NVRTC 12.8 or later
  // (the first with automatic precompiled headers, which convjit asks for).
  [[nodiscard]] static const LibrarySpec& spec();

  [[nodiscard]] const NvrtcApi& api() const { return api_; }

  // An NVRTC call's result as a Status naming the call.
  [[nodiscard]] Status check(nvrtcResult result, const char* call) const;

 private:
  Status accept(void* handle);

  NvrtcApi api_;
};

}  // namespace convjit
