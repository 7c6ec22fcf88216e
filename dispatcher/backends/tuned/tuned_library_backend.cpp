#include "dispatcher/backends/tuned/tuned_library_backend.hpp"

#include <fmt/format.h>
#include <sys/stat.h>

#include "cache/code_trust.hpp"
#include "dispatcher/backends/tuned/convjit_abi_kernel.hpp"
#include "dispatcher/backends/tuned/dace_kernel.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/settings.hpp"

namespace convjit {

namespace {

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

// `abi` receives which ABI the library speaks.
Result<std::unique_ptr<Kernel>> load_candidate(const TunedCandidate& candidate,
                                               const OpDescriptor& desc,
                                               const convjit_device_t& device, std::string& abi) {
  auto library = SharedLibrary::open(candidate.path);
  if (!library.is_ok()) return library.status();
  if (has_convjit_abi(library.value())) {
    abi = "convjit ABI";
    return make_convjit_abi_kernel(std::move(library).value(), candidate, desc, device);
  }
  if (has_dace_abi(library.value())) {
    abi = "DaCe ABI";
    return make_dace_kernel(std::move(library).value(), candidate, desc, device);
  }
  return Status::unsupported(
      "exports neither convjit_kernel_abi_version (convjit ABI) nor __program_conv (DaCe ABI)");
}

}  // namespace

std::vector<TunedCandidate> tuned_library_candidates(const OpDescriptor& desc,
                                                     const std::vector<std::string>& search_path) {
  const std::string concrete = descriptor_name(desc);
  const std::string symbolic = descriptor_name(with_symbolic_batch(desc));
  std::vector<TunedCandidate> candidates;
  for (const std::string& directory : search_path) {
    candidates.push_back({directory + "/lib" + concrete + ".so", concrete, false});
    candidates.push_back({directory + "/lib" + symbolic + ".so", symbolic, true});
  }
  return candidates;
}

std::string ProbeReport::summary() const {
  std::string text;
  for (const ProbeStep& step : steps)
    text += fmt::format("{}{}: {}", text.empty() ? "" : "; ", step.candidate.path, step.outcome);
  return text.empty() ? "no cache directory to probe" : text;
}

namespace {

// One candidate: exists, trusted, then (under ProbeMode::load) loaded; the
// outcome goes into `step`, the kernel is returned when it loaded.
std::unique_ptr<Kernel> probe_candidate(ProbeStep& step, const OpDescriptor& desc,
                                        const convjit_device_t& device, ProbeMode mode) {
  step.exists = path_exists(step.candidate.path);
  if (!step.exists) {
    step.outcome = "not found";
    return nullptr;
  }
  if (Status trusted = check_code_trust(step.candidate.path); !trusted.is_ok()) {
    step.outcome = "rejected: " + trusted.message();
    return nullptr;
  }
  if (mode == ProbeMode::dry_run) {
    step.outcome = "would load";
    return nullptr;
  }
  std::string abi = "unknown ABI";
  auto kernel = load_candidate(step.candidate, desc, device, abi);
  if (!kernel.is_ok()) {
    step.outcome = fmt::format("rejected ({}): {}", abi, kernel.status().message());
    return nullptr;
  }
  step.outcome = fmt::format("loaded ({})", abi);
  return std::move(kernel).value();
}

}  // namespace

ProbeReport probe_tuned_libraries(const OpDescriptor& desc, const convjit_device_t& device,
                                  const std::vector<std::string>& search_path, ProbeMode mode) {
  ProbeReport report;
  for (const TunedCandidate& candidate : tuned_library_candidates(desc, search_path)) {
    ProbeStep& step = report.steps.emplace_back(ProbeStep{candidate, false, ""});
    report.kernel = probe_candidate(step, desc, device, mode);
    if (report.kernel || step.outcome == "would load") return report;
  }
  return report;
}

Status TunedLibraryBackend::check_support(const OpDescriptor& desc, const convjit_device_t&) const {
  if (desc.symbolic_batch) return Status::unsupported("a symbolic-batch descriptor cannot run");
  if (desc.has_epilogue() && desc.is_conv())
    return Status::unsupported(
        "the tuned-library ABI passes no epilogue operands; fused convs run on the JIT or the "
        "reference");
  return Status::ok();
}

Result<std::unique_ptr<Kernel>> TunedLibraryBackend::build(const OpDescriptor& desc,
                                                           const convjit_device_t& device,
                                                           BuildTrace& trace) {
  const auto settings = SettingsStore::instance().snapshot();
  ProbeReport report =
      probe_tuned_libraries(desc, device, settings->cache_path.value, ProbeMode::load);
  for (const ProbeStep& step : report.steps)
    trace.probes.push_back({step.candidate.path, step.outcome});
  if (report.kernel) return std::move(report.kernel);
  return Status::not_available(fmt::format("no usable tuned library ({})", report.summary()));
}

std::optional<std::vector<std::string>> TunedLibraryBackend::variant_ids(
    const OpDescriptor& desc, const convjit_device_t&) const {
  std::vector<std::string> present;
  for (const TunedCandidate& c :
       tuned_library_candidates(desc, SettingsStore::instance().snapshot()->cache_path.value))
    if (path_exists(c.path)) present.push_back(c.path);
  return present;
}

Result<std::unique_ptr<Kernel>> TunedLibraryBackend::build_variant(const OpDescriptor& desc,
                                                                   const convjit_device_t& device,
                                                                   std::string_view id,
                                                                   BuildTrace& trace) {
  if (id.empty()) return build(desc, device, trace);
  const std::string symbolic = descriptor_name(with_symbolic_batch(desc));
  const std::string path(id);
  const bool is_symbolic = path.ends_with("/lib" + symbolic + ".so");
  ProbeStep step{{path, is_symbolic ? symbolic : descriptor_name(desc), is_symbolic}, false, ""};
  auto kernel = probe_candidate(step, desc, device, ProbeMode::load);
  trace.probes.push_back({path, step.outcome});
  if (!kernel)
    return Status::not_available(fmt::format("tuned library {}: {}", path, step.outcome));
  trace.variant = path;
  return kernel;
}

}  // namespace convjit
