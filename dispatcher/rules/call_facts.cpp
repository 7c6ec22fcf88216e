#include "dispatcher/rules/call_facts.hpp"

#include "dispatcher/backends/cudnn/cudnn_library.hpp"
#include "dispatcher/backends/jit/nvrtc_library.hpp"
#include "dispatcher/backends/onednn/onednn_library.hpp"
#include "dispatcher/cuda/cuda_driver.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/settings.hpp"

namespace convjit::rules {

namespace {

std::optional<Version> loaded_version(const SearchedLibrary& library) {
  return library.available().is_ok() ? parse_version(library.version()) : std::nullopt;
}

}  // namespace

// Only the libraries that can serve the device are asked: a host-only
// process never loads cuDNN for a rule's sake.
CallFacts call_facts(const OpDescriptor& desc, const convjit_device_t& device) {
  CallFacts f;
  f.desc = desc;
  f.name = descriptor_name(desc);
  f.device = device;
  if (device.kind == CONVJIT_DEVICE_CUDA) {
    f.arch = CudaDriver::instance().arch_of(device.ordinal);
    if (f.arch.empty()) f.arch = SettingsStore::instance().snapshot()->arch.value;
    f.cudnn = loaded_version(CudnnLibrary::instance());
    f.nvrtc = loaded_version(NvrtcLibrary::instance());
  } else {
    f.onednn = loaded_version(OnednnLibrary::instance());
  }
  return f;
}

}  // namespace convjit::rules
