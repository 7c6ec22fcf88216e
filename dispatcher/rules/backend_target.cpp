#include "dispatcher/rules/backend_target.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <filesystem>

#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/onednn/onednn_backend.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"

namespace convjit::rules {

namespace {

// The default chain's backends (Dispatcher::backend_names() is tested to be
// the same list); tuned libraries are named by path, through "library".
constexpr std::array<std::string_view, 6> kBackends = {
    kTunedLibraryBackend, "jit", "cudnn", "onednn", "reference", "emulator"};

// cuDNN's variant ids are CudnnAlgorithm::id(): algo<N>-<math type>.
constexpr std::array<std::string_view, 4> kCudnnMath = {"fma", "tensor-op",
                                                        "tensor-op-with-conversion", "default"};

std::string jit_variant_names() {
  std::string names = fmt::format("{}, {}, {}, {}, {}", kDirectVariant, kDepthwiseVariant,
                                  kDepthwiseTileVariant, kTileVariant, kVectorVariant);
  for (const GemmTile& tile : gemm_tiles()) names += fmt::format(", {}", tile.id);
  return names;
}

bool is_jit_variant(std::string_view id) {
  return id == kDirectVariant || id == kDepthwiseVariant || id == kDepthwiseTileVariant ||
         id == kTileVariant || id == kVectorVariant || find_gemm_tile(id) != nullptr;
}

// "algo12-" -> 12, with `rest` the math type.
std::optional<int> cudnn_algorithm_of(std::string_view id, std::string_view& rest) {
  if (!id.starts_with("algo")) return std::nullopt;
  id.remove_prefix(4);
  int number = -1;
  const auto [end, error] = std::from_chars(id.data(), id.data() + id.size(), number);
  if (error != std::errc() || end == id.data() || number < 0) return std::nullopt;
  rest = std::string_view(end, id.data() + id.size() - end);
  return number;
}

bool is_cudnn_variant(std::string_view id) {
  std::string_view rest;
  if (!cudnn_algorithm_of(id, rest) || !rest.starts_with('-')) return false;
  return std::find(kCudnnMath.begin(), kCudnnMath.end(), rest.substr(1)) != kCudnnMath.end();
}

Status check_variant_name(std::string_view backend, std::string_view variant,
                          std::string_view where) {
  if (backend == "jit" && !is_jit_variant(variant))
    return Status::invalid(fmt::format("{}: the JIT has no variant '{}'; its variants are {}",
                                       where, variant, jit_variant_names()));
  if (backend == "cudnn" && !is_cudnn_variant(variant))
    return Status::invalid(fmt::format(
        "{}: '{}' is not a cuDNN variant id (algo<N>-<math>, math one of {}); or name the "
        "algorithm alone with {{\"backend\": \"cudnn\", \"algorithm\": N}}",
        where, variant, fmt::join(kCudnnMath, ", ")));
  if (backend == "onednn" && variant != kOnednnStridedVariant && variant != kOnednnBlockedVariant)
    return Status::invalid(fmt::format("{}: oneDNN has no variant '{}'; its variants are {}, {}",
                                       where, variant, kOnednnStridedVariant,
                                       kOnednnBlockedVariant));
  if (backend == "reference" || backend == "emulator")
    return Status::invalid(
        fmt::format("{}: the {} backend has no variants; name it alone", where, backend));
  if (backend == kTunedLibraryBackend)
    return Status::invalid(fmt::format(
        "{}: name a tuned library by its path, {{\"library\": \"/dir/lib{{descriptor}}.so\"}}",
        where));
  return Status::ok();
}

Status check_backend(std::string_view backend, std::string_view where) {
  if (std::find(kBackends.begin(), kBackends.end(), backend) != kBackends.end())
    return Status::ok();
  return Status::invalid(fmt::format("{}: unknown backend '{}'; the backends are {}", where,
                                     backend, target_backends()));
}

std::string replace_all(std::string text, std::string_view from, std::string_view to) {
  for (std::size_t at = text.find(from); at != std::string::npos;
       at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// An absolute path; its directory must exist, and the file itself too when
// no placeholder makes it per call.
Status check_library(const std::string& path, std::string_view where) {
  namespace fs = std::filesystem;
  if (path.empty() || path.front() != '/')
    return Status::invalid(fmt::format("{}: library path '{}' must be absolute", where, path));
  const std::size_t slash = path.rfind('/');
  const std::string file = path.substr(slash + 1);
  if (path.substr(0, slash).find('{') != std::string::npos)
    return Status::invalid(fmt::format(
        "{}: library path '{}' has a placeholder in its directory; only the file name may hold "
        "{{descriptor}} or {{symbolic}}",
        where, path));
  const bool templated = file.find("{descriptor}") != std::string::npos ||
                         file.find("{symbolic}") != std::string::npos;
  std::error_code error;
  const std::string must_exist = templated ? path.substr(0, slash + 1) : path;
  if (!fs::exists(must_exist, error))
    return Status::invalid(fmt::format("{}: library {} '{}' does not exist", where,
                                       templated ? "directory" : "path", must_exist));
  return Status::ok();
}

Result<Target> from_label(std::string_view text, std::string_view where) {
  const std::size_t open = text.find('[');
  std::string backend(text.substr(0, open));
  std::string variant;
  if (open != std::string_view::npos) {
    if (!text.ends_with(']') || open + 2 > text.size() - 1)
      return Status::invalid(fmt::format(
          "{}: '{}' is neither a backend nor backend[variant] (e.g. jit[direct])", where, text));
    variant = text.substr(open + 1, text.size() - open - 2);
  }
  nlohmann::json object = {{"backend", backend}};
  if (!variant.empty()) object["variant"] = variant;
  return Target::from_json(object, where);
}

}  // namespace

std::string target_backends() {
  return fmt::format("{} (or {{\"library\": path}} for a tuned library)",
                     fmt::join(kBackends.begin() + 1, kBackends.end(), ", "));
}

Result<Target> Target::from_json(const nlohmann::json& value, std::string_view where) {
  if (value.is_string()) return from_label(value.get<std::string>(), where);
  if (!value.is_object())
    return Status::invalid(fmt::format(
        "{}: a target is \"backend\", \"backend[variant]\" or an object with backend and variant, "
        "backend and algorithm, or library",
        where));
  Target t;
  for (const auto& [key, item] : value.items()) {
    const bool number = key == "algorithm";
    if (key != "backend" && key != "variant" && key != "algorithm" && key != "library")
      return Status::invalid(fmt::format(
          "{}: unknown target key '{}'; the keys are backend, variant, algorithm, library", where,
          key));
    if (number ? !item.is_number_integer() || item.get<long long>() < 0 : !item.is_string())
      return Status::invalid(fmt::format("{}: target key '{}' takes {}", where, key,
                                         number ? "a cuDNN algorithm number" : "a string"));
  }
  if (value.contains("library")) {
    if (value.size() != 1)
      return Status::invalid(
          fmt::format("{}: a library target takes only \"library\" (the path)", where));
    t.backend_ = kTunedLibraryBackend;
    t.variant_ = value["library"].get<std::string>();
    if (Status s = check_library(t.variant_, where); !s.is_ok()) return s;
    return t;
  }
  if (!value.contains("backend"))
    return Status::invalid(fmt::format("{}: a target object needs \"backend\"", where));
  t.backend_ = value["backend"].get<std::string>();
  if (Status s = check_backend(t.backend_, where); !s.is_ok()) return s;
  if (value.contains("variant") && value.contains("algorithm"))
    return Status::invalid(fmt::format("{}: give \"variant\" or \"algorithm\", not both", where));
  if (value.contains("algorithm")) {
    if (t.backend_ != "cudnn")
      return Status::invalid(
          fmt::format("{}: \"algorithm\" names a cuDNN algorithm; this target's backend is {}",
                      where, t.backend_));
    t.algorithm_ = value["algorithm"].get<int>();
  }
  if (value.contains("variant")) {
    t.variant_ = value["variant"].get<std::string>();
    if (Status s = check_variant_name(t.backend_, t.variant_, where); !s.is_ok()) return s;
  }
  return t;
}

bool Target::covers(std::string_view backend, std::string_view variant_id,
                    const CallFacts& call) const {
  if (backend != backend_) return false;
  if (!names_variant()) return true;
  if (algorithm_) {
    std::string_view rest;
    return cudnn_algorithm_of(variant_id, rest) == algorithm_ && rest.starts_with('-');
  }
  return variant_id == variant_for(call);
}

std::string Target::variant_for(const CallFacts& call) const {
  if (backend_ != kTunedLibraryBackend) return variant_;
  std::string path = replace_all(variant_, "{descriptor}", call.name);
  return replace_all(path, "{symbolic}", descriptor_name(with_symbolic_batch(call.desc)));
}

std::string Target::label() const {
  if (algorithm_) return fmt::format("{}[algorithm {}]", backend_, *algorithm_);
  return variant_.empty() ? backend_ : fmt::format("{}[{}]", backend_, variant_);
}

}  // namespace convjit::rules
