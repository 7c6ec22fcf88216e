#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <optional>
#include <span>

#include "cli_status.hpp"
#include "command.hpp"
#include "dispatcher/backends/tuned/tuned_library_backend.hpp"
#include "dispatcher/descriptor/descriptor_flags.hpp"
#include "dispatcher/descriptor/descriptor_json.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/descriptor_validation.hpp"
#include "dispatcher/settings.hpp"
#include "lbann/dace_pin_file.hpp"
#include "problem_flags.hpp"

namespace convjit::cli {

namespace {

template <std::size_t N>
std::string list(const std::array<std::int64_t, N>& values, int count, bool symbolic = false) {
  std::vector<std::string> items;
  for (int i = 0; i < count; ++i)
    items.push_back(i == 0 && symbolic ? "B"
                                       : fmt::format("{}", values[static_cast<std::size_t>(i)]));
  return fmt::format("[{}]", fmt::join(items, ", "));
}

std::string op_title(const OpDescriptor& d) {
  switch (d.kind) {
    case OpKind::conv:
      return fmt::format("conv{}d {} (groups {})", d.spatial_dims, direction_name(d.direction),
                         d.groups);
    case OpKind::pool:
      return fmt::format("{} pool{}d {}", pool_mode_name(d.pool_mode), d.spatial_dims,
                         direction_name(d.direction));
    case OpKind::bias_grad:
      return fmt::format("conv{}d bias gradient", d.spatial_dims);
    case OpKind::batchnorm:
      return fmt::format("batchnorm{}d {}{}", d.spatial_dims, direction_name(d.direction),
                         d.has_norm_flag(kNormInference) ? " (inference)" : " (training)");
    case OpKind::resize:
      return fmt::format("{} resize{}d {} ({})", resize_mode_name(d.resize_mode), d.spatial_dims,
                         direction_name(d.direction),
                         resize_coordinates_name(d.resize_coordinates));
  }
  return "?";
}

// What a library `convjit export --dace` wrote at `path` is pinned to, or
// nullopt when `path` holds none (absent, or another kind of library).
std::optional<std::string> exported_pin(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) return std::nullopt;
  auto pin = read_dace_pin(path);
  if (!pin.is_ok() || pin.value().version == 0) return std::nullopt;
  const convjit_dace_pin_t& p = pin.value();
  return fmt::format("{} on {}, chosen at batch {}: {}", variant_label(p.backend, p.variant),
                     p.device_kind == CONVJIT_DEVICE_CUDA ? "cuda" : "host", p.chosen_batch,
                     p.reason);
}

// The library files of `d` in the cache path: what the tuned-library
// backend probes for a concrete op; a symbolic name's own file in each
// directory (a symbolic op is never run, only named).
std::vector<std::string> library_paths(const OpDescriptor& d) {
  const auto settings = SettingsStore::instance().snapshot();
  std::vector<std::string> paths;
  if (!d.symbolic_batch) {
    for (const TunedCandidate& c : tuned_library_candidates(d, settings->cache_path.value))
      paths.push_back(c.path);
    return paths;
  }
  for (const std::string& directory : settings->cache_path.value)
    paths.push_back(directory + "/lib" + descriptor_name(d) + ".so");
  return paths;
}

// `has_batch`: dims[0] is a batch (not w's K), shown as B when symbolic.
void print_tensor(const char* name, const Dims5& dims, const Dims5& strides,
                  const OpDescriptor& d, bool has_batch = true) {
  fmt::print("{:<10}shape {}  strides {}\n", name,
             list(dims, d.rank(), has_batch && d.symbolic_batch != 0), list(strides, d.rank()));
}

void print_descriptor(const OpDescriptor& d) {
  const SlotNames slots = slot_names(d);
  fmt::print("{}\n", descriptor_name(d));
  fmt::print("{:<10}{}\n", "op", op_title(d));
  fmt::print("{:<10}{}\n", "dtype", dtype_name(d.dtype));
  if (d.kind != OpKind::bias_grad) print_tensor(slots.x, d.x_dims, d.x_strides, d);
  if (d.is_conv()) print_tensor(slots.w, d.w_dims, d.w_strides, d, /*has_batch=*/false);
  if (d.is_pool()) fmt::print("{:<10}{}\n", "window", list(d.window, d.spatial_dims));
  print_tensor(slots.y, d.y_dims, d.y_strides, d);
  if (d.has_window()) {
    fmt::print("{:<10}begin {}  end {}\n", "padding", list(d.pad_begin, d.spatial_dims),
               list(d.pad_end, d.spatial_dims));
    fmt::print("{:<10}{}\n", "stride", list(d.stride, d.spatial_dims));
    fmt::print("{:<10}{}\n", "dilation", list(d.dilation, d.spatial_dims));
  }
  if (!d.symbolic_batch)
    fmt::print("{:<10}{}\n", "symbolic", descriptor_name(with_symbolic_batch(d)));
  fmt::print("{:<10}{}\n", "flags", descriptor_flags(d));
  for (const std::string& path : library_paths(d)) {
    if (!d.symbolic_batch) fmt::print("{:<10}{}\n", "probes", path);
    if (auto pin = exported_pin(path)) fmt::print("{:<10}{}: {}\n", "exported", path, *pin);
  }
}

class DescribeCommand final : public Command {
 public:
  explicit DescribeCommand(CLI::App& app) {
    command_ =
        app.add_subcommand("describe", "Print an operation's canonical descriptor name and fields");
    command_->footer(
        "Examples:\n"
        "  convjit describe conv --x 32,3,224,224 --w 64,3,7,7 --stride 2,2 --pad 3,3\n"
        "  convjit describe pool --x 1,64,112,112 --window 3,3 --stride 2,2 --pad 1,1 --mode max\n"
        "  convjit describe batchnorm --x 32,16,80,80 --layout nhwc --act silu\n"
        "  convjit describe resize --x 1,256,20,20 --scale 2,2 --mode nearest\n"
        "  convjit describe --name "
        "conv2d_B_3_224_224_0_150528_50176_224_1_0_64_3_7_7_0_B_64_112_112_0_802816_12544_112_1_0_"
        "3_3_0_2_2_0_1_1_0_1_fwd");
    command_->add_flag("--json", json_, "machine-readable output");
    problem_ = std::make_unique<ProblemInput>(*command_);
  }

  [[nodiscard]] const std::string& name() const override { return command_->get_name(); }
  [[nodiscard]] bool selected() const override { return command_->parsed(); }
  [[nodiscard]] int run() const override {
    const OpDescriptor d = problem_->descriptor();
    if (!json_) {
      print_descriptor(d);
      return kExitOk;
    }
    nlohmann::json j = descriptor_json(d);
    j["probes"] = nlohmann::json::array();
    j["exported"] = nlohmann::json::object();
    for (const std::string& path : library_paths(d)) {
      if (!d.symbolic_batch) j["probes"].push_back(path);
      if (auto pin = exported_pin(path)) j["exported"][path] = *pin;
    }
    fmt::print("{}\n", j.dump(2));
    return kExitOk;
  }

 private:
  CLI::App* command_ = nullptr;
  std::unique_ptr<ProblemInput> problem_;
  bool json_ = false;
};

}  // namespace

std::unique_ptr<Command> make_describe_command(CLI::App& app) {
  return std::make_unique<DescribeCommand>(app);
}

}  // namespace convjit::cli
