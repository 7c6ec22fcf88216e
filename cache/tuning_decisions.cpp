#include "cache/tuning_decisions.hpp"

#include <fmt/format.h>
#include <xxhash.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "cache/cache_directories.hpp"
#include "cache/cache_entry.hpp"

namespace convjit {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLayout = "decisions/v1";
constexpr int kFormat = 1;

// Every field a decision is read from has the type it must have; the
// optional ones (decisions written before variants existed have none) too.
bool is_decision(const nlohmann::json& json) {
  const auto string_or_absent = [&](const char* field) {
    return !json.contains(field) || json[field].is_string();
  };
  return json.is_object() && json.contains("format") && json["format"] == kFormat &&
         json.contains("preimage") && json["preimage"].is_string() && json.contains("backend") &&
         json["backend"].is_string() && string_or_absent("variant") && string_or_absent("summary");
}

}  // namespace

TuningKey make_tuning_key(const TuningKeyFields& f) {
  TuningKey key;
  key.preimage = fmt::format(
      "convjit-tuning-key v1\ndescriptor={}\ndevice={}\narch={}\ncudnn={}\nnvrtc={}\nonednn={}\n"
      "convjit={}\n",
      f.descriptor, f.device, f.arch, f.cudnn_version, f.nvrtc_version, f.onednn,
      f.convjit_version);
  // Only where rules govern the call, so decisions stored before rules
  // existed keep their keys.
  if (!f.rules.empty()) key.preimage += fmt::format("rules={}\n", f.rules);
  const XXH128_hash_t h = XXH3_128bits(key.preimage.data(), key.preimage.size());
  const std::string hash = fmt::format("{:016x}{:016x}", h.high64, h.low64);
  key.relative_path = fmt::format("{}/{}/{}.json", kLayout, hash.substr(0, 2), hash);
  return key;
}

TuningDecisions::TuningDecisions(std::vector<std::string> search_path)
    : search_path_(std::move(search_path)) {}

bool TuningDecisions::any_stored() const {
  std::error_code error;
  return std::any_of(search_path_.begin(), search_path_.end(), [&](const std::string& dir) {
    return fs::is_directory(fs::path(dir) / kLayout, error);
  });
}

Result<TuningDecision> TuningDecisions::lookup(const TuningKey& key) const {
  for (const std::string& dir : search_path_) {
    auto bytes = read_file((fs::path(dir) / key.relative_path).string());
    if (!bytes.is_ok()) continue;
    const auto json = nlohmann::json::parse(bytes.value(), nullptr, false);
    if (!is_decision(json) || json["preimage"] != key.preimage)
      continue;  // damaged, foreign or a hash collision: measure again
    return TuningDecision{json["backend"].get<std::string>(), json.value("variant", ""),
                          json.value("summary", "")};
  }
  return Status::not_available("no tuning decision stored");
}

Status TuningDecisions::store(const TuningKey& key, const TuningDecision& decision) const {
  const std::string writable = first_writable_directory(search_path_);
  if (writable.empty())
    return Status::not_available("no writable cache directory; the decision is kept in memory");
  const fs::path path = fs::path(writable) / key.relative_path;
  if (!make_private_directories(path.parent_path()))
    return Status::not_available(
        fmt::format("cannot create {}; the decision is kept in memory", path.parent_path().string()));
  const nlohmann::json json{{"format", kFormat},
                            {"preimage", key.preimage},
                            {"backend", decision.backend},
                            {"variant", decision.variant},
                            {"summary", decision.summary}};
  return publish_file(path.string(), json.dump(2) + "\n");
}

std::uint64_t TuningDecisions::clear() const {
  const std::string writable = first_writable_directory(search_path_);
  if (writable.empty()) return 0;
  std::error_code error;
  const fs::path root = fs::path(writable) / "decisions";  // every layout version
  std::uint64_t removed = 0;
  for (auto it = fs::recursive_directory_iterator(root, error); !error && it != fs::end(it);
       it.increment(error))
    if (it->is_regular_file(error) && it->path().extension() == ".json") ++removed;
  fs::remove_all(root, error);
  return removed;
}

}  // namespace convjit
