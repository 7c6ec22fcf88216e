// The backend interface every step of the dispatch chain implements, after
// cudnn-frontend's engines: check_support -> build -> execute.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "convjit/convjit.h"
#include "convjit/status.hpp"
#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/exec_args.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

// An operation made ready for one descriptor and device.  execute() is the
// hot path: it must not allocate or lock.
class Kernel {
 public:
  virtual ~Kernel() = default;
  [[nodiscard]] virtual Status execute(const ExecArgs& args) const = 0;
  // Scratch bytes a call needs.  A caller may pass that much in
  // ExecArgs::workspace; one that passes none gets the kernel's own.
  [[nodiscard]] virtual std::size_t workspace_bytes() const { return 0; }
};

// What a backend looked at while building: the verbose log and
// `convjit query` show it.
struct BuildTrace {
  struct Probe {
    std::string path;
    std::string outcome;
  };
  std::vector<Probe> probes;
  // The variant build() chose, named as build_variant() takes it, where the
  // backend can name it ("" otherwise): a pin (convjit export) keeps it.
  std::string variant;
};

// "jit[tc128x64]": a backend and its variant as logs, pins and the CLI show
// them; the backend alone where the variant is "".
[[nodiscard]] inline std::string variant_label(std::string_view backend, std::string_view variant) {
  std::string label(backend);
  if (!variant.empty()) label.append("[").append(variant).append("]");
  return label;
}

// One way a backend can run a descriptor (one cuDNN algorithm, say).
struct KernelVariant {
  std::string id;  // stable across processes, so tuning decisions can name it; "" is build()'s
  std::unique_ptr<Kernel> kernel;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // A short, stable, static name for logs and the C API ("reference").
  [[nodiscard]] virtual std::string_view name() const = 0;

  // OK if this backend can serve the op on the device, else a status whose
  // message says why not (the dispatcher logs it and moves on).
  [[nodiscard]] virtual Status check_support(const OpDescriptor& desc,
                                             const convjit_device_t& device) const = 0;

  // Prepares a kernel; called once per descriptor and device.
  [[nodiscard]] virtual Result<std::unique_ptr<Kernel>> build(const OpDescriptor& desc,
                                                              const convjit_device_t& device,
                                                              BuildTrace& trace) = 0;

  // Every variant worth measuring (the `tuned` policy, `convjit bench`);
  // by default the one kernel build() makes.
  [[nodiscard]] virtual Result<std::vector<KernelVariant>> build_variants(
      const OpDescriptor& desc, const convjit_device_t& device, BuildTrace& trace) {
    auto kernel = build(desc, device, trace);
    if (!kernel.is_ok()) return kernel.status();
    std::vector<KernelVariant> variants;
    variants.push_back({"", std::move(kernel).value()});
    return variants;
  }

  // The ids build_variants would make, preference first, where the backend
  // can list them without building anything; nullopt where it cannot.  A
  // rule that denies some variants builds the first one left from this.
  [[nodiscard]] virtual std::optional<std::vector<std::string>> variant_ids(
      const OpDescriptor&, const convjit_device_t&) const {
    return std::nullopt;
  }

  // The variant `id` names, as build_variants made it, possibly in another
  // process; NOT_AVAILABLE when the backend no longer offers it.
  [[nodiscard]] virtual Result<std::unique_ptr<Kernel>> build_variant(
      const OpDescriptor& desc, const convjit_device_t& device, std::string_view id,
      BuildTrace& trace) {
    if (id.empty()) return build(desc, device, trace);
    return Status::not_available(std::string(name()) + " offers no variant " + std::string(id));
  }
};

// The variants `ids` name, each made by `build(id)`, in that order; the
// first failure stops it.  For backends whose variants are a list of ids.
template <class Build>
[[nodiscard]] Result<std::vector<KernelVariant>> build_each_variant(
    const std::vector<std::string>& ids, Build&& build) {
  std::vector<KernelVariant> variants;
  for (const std::string& id : ids) {
    auto kernel = build(id);
    if (!kernel.is_ok()) return kernel.status();
    variants.push_back({id, std::move(kernel).value()});
  }
  return variants;
}

// check_support, then build() (or the variant `id` names): the kernel, or
// why the backend declined.
[[nodiscard]] inline Result<std::unique_ptr<Kernel>> build_if_supported(
    Backend& backend, const OpDescriptor& desc, const convjit_device_t& device, BuildTrace& trace,
    std::string_view id = {}) {
  if (Status s = backend.check_support(desc, device); !s.is_ok()) return s;
  return id.empty() ? backend.build(desc, device, trace)
                    : backend.build_variant(desc, device, id, trace);
}

// check_support, then every variant the backend offers for measuring.
[[nodiscard]] inline Result<std::vector<KernelVariant>> build_variants_if_supported(
    Backend& backend, const OpDescriptor& desc, const convjit_device_t& device, BuildTrace& trace) {
  if (Status s = backend.check_support(desc, device); !s.is_ok()) return s;
  return backend.build_variants(desc, device, trace);
}

}  // namespace convjit
