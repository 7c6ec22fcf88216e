#include "lbann/dace_export.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "cache/cache_entry.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/descriptor_validation.hpp"
#include "dispatcher/dispatcher.hpp"
#include "lbann/dace_pin_file.hpp"

namespace convjit {

namespace {

using Kind = DaceExportOutcome::Kind;

bool ends_with(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(),
                                                      suffix) == 0;
}

// The kernel export pins: the named backend's own choice, or the chain's
// under the policy setting (tuned libraries left out: the library being
// written would be one).  Building it compiles the JIT kernel into the cache.
Result<Resolution> choose(const OpDescriptor& concrete, const DaceExportOptions& options) {
  const convjit_device_t device{options.device, 0};
  Dispatcher& dispatcher = Dispatcher::without_tuned_libraries();
  if (!options.backend.empty())
    return dispatcher.build_pinned(concrete, device, options.backend, "");
  return dispatcher.choose(concrete, device);
}

// Why `d` (named `name`) cannot be a DaCe library (pooling, a dtype other
// than f32, an op LBANN's grammar cannot name), or "" when it can.
std::string exclusion(const OpDescriptor& d, const std::string& name) {
  if (!d.is_conv())
    return "not a convolution: DiHydrogen sends only convolutions to DaCe libraries";
  if (d.dtype != DataType::f32)
    return fmt::format("{}: DiHydrogen sends only f32 convolutions to DaCe libraries",
                       dtype_name(d.dtype));
  if (d.has_epilogue()) return "a fused epilogue: the DaCe ABI passes no epilogue operands";
  if (!ends_with(name, "_fwd") && !ends_with(name, "_bwddata") && !ends_with(name, "_bwdfilt"))
    return "asymmetric padding or strided weights: LBANN's grammar cannot name it, so "
           "DiHydrogen never asks for it";
  return {};
}

DaceExportOutcome export_one(OpDescriptor desc, const DaceExportOptions& options,
                             const std::string& shim) {
  if (options.symbolic_batch && !desc.symbolic_batch) desc = with_symbolic_batch(desc);
  const std::string name = descriptor_name(desc);
  const std::string library = "lib" + name + ".so";
  if (desc.symbolic_batch && !options.batch)
    return {Kind::failed, library,
            "a symbolic-batch library is chosen and preloaded at one batch: pass --batch N (the "
            "mini-batch per rank)"};
  const std::string path = options.directory + "/" + library;
  const DaceExportOutcome kept{Kind::kept, library, "exists; --force replaces it"};
  if (!options.force && std::filesystem::exists(path)) return kept;
  const OpDescriptor concrete = desc.symbolic_batch ? with_batch(desc, *options.batch) : desc;
  if (Status s = validate_descriptor(concrete); !s.is_ok())
    return {Kind::failed, library, s.message()};
  auto chosen = choose(concrete, options);
  if (!chosen.is_ok()) return {Kind::failed, library, chosen.status().message()};
  const Resolution& r = chosen.value();
  auto pin = make_dace_pin(name, options.device, concrete.x_dims[0], std::string(r.backend),
                           r.variant, r.reason);
  if (!pin.is_ok()) return {Kind::failed, library, pin.status().message()};
  auto image = stamp_dace_pin(shim, pin.value());
  if (!image.is_ok()) return {Kind::failed, library, image.status().message()};
  const Status published =
      publish_file(path, image.value(), PublishOptions{0755, options.force, {}});
  if (!published.is_ok() && !options.force && std::filesystem::exists(path)) return kept;
  if (!published.is_ok()) return {Kind::failed, library, published.message()};
  return {Kind::written, library,
          fmt::format("{} ({})", variant_label(r.backend, r.variant), r.reason)};
}

}  // namespace

std::vector<DaceExportOutcome> export_dace_libraries(const std::vector<std::string>& names,
                                                     const DaceExportOptions& options,
                                                     const std::atomic<bool>* stop) {
  std::vector<DaceExportOutcome> outcomes;
  Result<std::string> shim = read_file(options.shim_path);
  if (shim.is_ok())
    shim = set_shim_runpath(std::move(shim).value(), options.runpath_placeholder,
                            options.libconvjit_directory);
  for (const std::string& name : names) {
    if (stop && stop->load()) break;
    auto desc = parse_descriptor_name(name);
    if (!desc.is_ok()) {
      outcomes.push_back({Kind::failed, name, desc.status().message()});
      continue;
    }
    if (std::string why = exclusion(desc.value(), name); !why.empty()) {
      outcomes.push_back({Kind::skipped, name, why});
      continue;
    }
    if (!shim.is_ok()) {
      outcomes.push_back({Kind::failed, name, shim.status().message()});
      continue;
    }
    outcomes.push_back(export_one(desc.value(), options, shim.value()));
  }
  return outcomes;
}

}  // namespace convjit
