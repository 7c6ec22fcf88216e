#include "dispatcher/backends/jit/nvrtc_library.hpp"

#include <fmt/format.h>

#include "dispatcher/libraries/dynamic_symbol.hpp"
#include "dispatcher/libraries/library_call_status.hpp"

namespace convjit {

namespace {

// Automatic precompiled headers (the -pch option) came with NVRTC 12.8.
constexpr int kMinimumMajor = 12, kMinimumMinor = 8;
// The newest major convjit was built against and tested with.
constexpr int kMaximumMajor = 13;

}  // namespace

const LibrarySpec& NvrtcLibrary::spec() {
  static const LibrarySpec spec{"NVRTC",
                                "CONVJIT_NVRTC_LIBRARY",
                                {"libnvrtc.so.13", "libnvrtc.so.12"},
                                "NVRTC 12.8 or later, major 12 or 13"};
  return spec;
}

const NvrtcLibrary& NvrtcLibrary::instance() {
  // Kept loaded until exit: kernels compiled by it may outlive any owner.
  static const NvrtcLibrary* library =
      new NvrtcLibrary(library_search_places(spec(), process_environment));
  return *library;
}

NvrtcLibrary::NvrtcLibrary(const std::vector<SearchPlace>& places) {
  search(spec(), places, [this](void* handle) { return accept(handle); });
  if (!available().is_ok()) api_ = {};
}

// The version first, so a library of the wrong major is named as such rather
// than by whichever symbol it happens to lack.
Status NvrtcLibrary::accept(void* handle) {
  api_ = {};
  if (!load_symbol(handle, "nvrtcVersion", api_.version))
    return Status::not_available("not NVRTC: it lacks nvrtcVersion");
  int major = 0, minor = 0;
  if (api_.version(&major, &minor) != NVRTC_SUCCESS)
    return Status::not_available("nvrtcVersion failed");
  if (major > kMaximumMajor || major < kMinimumMajor ||
      (major == kMinimumMajor && minor < kMinimumMinor))
    return Status::not_available(fmt::format("it is NVRTC {}.{}; convjit needs {}", major, minor,
                                             spec().requirement));
  const SymbolLookup symbols[] = {
      CONVJIT_LOAD_SYMBOL(handle, api_, get_error_string, nvrtcGetErrorString),
      CONVJIT_LOAD_SYMBOL(handle, api_, create_program, nvrtcCreateProgram),
      CONVJIT_LOAD_SYMBOL(handle, api_, destroy_program, nvrtcDestroyProgram),
      CONVJIT_LOAD_SYMBOL(handle, api_, compile_program, nvrtcCompileProgram),
      CONVJIT_LOAD_SYMBOL(handle, api_, get_program_log_size, nvrtcGetProgramLogSize),
      CONVJIT_LOAD_SYMBOL(handle, api_, get_program_log, nvrtcGetProgramLog),
      CONVJIT_LOAD_SYMBOL(handle, api_, get_cubin_size, nvrtcGetCUBINSize),
      CONVJIT_LOAD_SYMBOL(handle, api_, get_cubin, nvrtcGetCUBIN),
      CONVJIT_LOAD_SYMBOL(handle, api_, get_ptx_size, nvrtcGetPTXSize),
      CONVJIT_LOAD_SYMBOL(handle, api_, get_ptx, nvrtcGetPTX),
  };
  if (const char* missing = first_missing(symbols))
    return Status::not_available(fmt::format("it lacks {}", missing));
  version_ = fmt::format("{}.{}", major, minor);
  return Status::ok();
}

Status NvrtcLibrary::check(nvrtcResult result, const char* call) const {
  if (result == NVRTC_SUCCESS) return Status::ok();
  const char* text = api_.get_error_string ? api_.get_error_string(result) : nullptr;
  return failed_library_call(CONVJIT_STATUS_EXECUTION_FAILED, call, text, static_cast<int>(result));
}

}  // namespace convjit
