#include "dispatcher/models/model_table_json.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

namespace convjit {

namespace {

struct TableError {
  std::string message;
};

std::int64_t integer(const nlohmann::json& layer, const char* field, std::int64_t fallback,
                     std::int64_t min, const std::string& where,
                     std::int64_t max = std::numeric_limits<std::int64_t>::max()) {
  if (!layer.contains(field)) return fallback;
  if (!layer[field].is_number_integer())
    throw TableError{fmt::format("{}: \"{}\" must be an integer", where, field)};
  if (layer[field].is_number_unsigned() &&
      layer[field].get<std::uint64_t>() > static_cast<std::uint64_t>(max))
    throw TableError{fmt::format("{}: \"{}\" = {} must be at most {}", where, field,
                                 layer[field].get<std::uint64_t>(), max)};
  const std::int64_t value = layer[field].get<std::int64_t>();
  if (value < min)
    throw TableError{fmt::format("{}: \"{}\" = {} must be at least {}", where, field, value, min)};
  if (value > max)
    throw TableError{fmt::format("{}: \"{}\" = {} must be at most {}", where, field, value, max)};
  return value;
}

// Each level halves the image; past 62 every size is 1.
constexpr std::int64_t kMaxLevel = 62;

ModelLayer parse_layer(const nlohmann::json& j, std::size_t index, const std::string& path) {
  if (!j.is_object()) throw TableError{fmt::format("{}: layers[{}] must be an object", path, index)};
  ModelLayer l;
  l.name = j.value("name", fmt::format("layer{}", index));
  const std::string where = fmt::format("{}: layers[{}] (\"{}\")", path, index, l.name);
  const std::string type = j.value("type", "conv");
  l.is_upsample = type == "upsample";
  l.is_pool = type != "conv" && !l.is_upsample;
  if (type == "maxpool")
    l.pool_mode = PoolingMode::max;
  else if (type == "avgpool" || type == "global_avgpool")
    l.pool_mode = PoolingMode::avg_exclude_pad;
  else if (type == "avgpadpool")
    l.pool_mode = PoolingMode::avg_include_pad;
  else if (type != "conv" && type != "upsample")
    throw TableError{fmt::format(
        "{}: \"type\" = \"{}\" is not conv, maxpool, avgpool, avgpadpool, global_avgpool or "
        "upsample",
        where, type)};
  l.global_pool = type == "global_avgpool";
  l.level = static_cast<int>(integer(j, "level", 0, 0, where, kMaxLevel));
  l.in_channels = integer(j, "in", 0, 1, where);
  if (l.in_channels == 0) throw TableError{where + ": \"in\" (input channels) is required"};
  l.out_channels = l.is_conv() ? integer(j, "out", 0, 1, where) : l.in_channels;
  if (l.out_channels == 0) throw TableError{where + ": \"out\" (output channels) is required"};
  l.kernel = integer(j, "kernel", 1, 1, where);
  l.stride = integer(j, "stride", l.is_pool ? l.kernel : 1, 1, where);
  l.pad = integer(j, "pad", l.is_pool ? 0 : l.kernel / 2, 0, where);
  l.groups = integer(j, "groups", 1, 0, where);
  const std::int64_t groups = l.groups == 0 ? l.in_channels : l.groups;  // 0: depthwise
  if (!l.is_pool && (l.in_channels % groups != 0 || l.out_channels % groups != 0))
    throw TableError{fmt::format(
        "{}: \"groups\" = {} must divide both \"in\" = {} and \"out\" = {} (0 means "
        "depthwise: groups = in)",
        where, l.groups, l.in_channels, l.out_channels)};
  l.bias = j.value("bias", false);
  l.batchnorm = l.is_conv() && j.value("batchnorm", false);
  if (l.is_upsample) l.upsample_scale = integer(j, "scale", 2, 1, where);
  l.input_layer = j.value("input_layer", false);
  l.count = static_cast<int>(integer(j, "count", 1, 1, where));
  return l;
}

}  // namespace

Result<ModelTable> load_model_table(const std::string& path) {
  if (std::error_code error; std::filesystem::is_directory(path, error))
    return Status::invalid(
        fmt::format("{} is a directory; pass a model table file in JSON", path));
  std::ifstream in(path);
  if (!in)
    return Status::not_available(
        fmt::format("cannot read the model table {}; check the path", path));
  const auto j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return Status::invalid(fmt::format("{} is not valid JSON", path));
  try {
    if (!j.is_object() || !j.contains("layers") || !j["layers"].is_array())
      throw TableError{path + ": expected an object with a \"layers\" array"};
    ModelTable table;
    table.name = j.value("name", path);
    table.description = j.value("description", "user table " + path);
    table.spatial_dims = static_cast<int>(integer(j, "spatial_dims", 2, 1, path));
    if (table.spatial_dims > 3) throw TableError{path + ": \"spatial_dims\" must be 1, 2 or 3"};
    table.default_image_size = integer(j, "image_size", 0, 1, path);
    if (table.default_image_size == 0) throw TableError{path + ": \"image_size\" is required"};
    for (std::size_t i = 0; i < j["layers"].size(); ++i)
      table.layers.push_back(parse_layer(j["layers"][i], i, path));
    if (table.layers.empty()) throw TableError{path + ": \"layers\" is empty"};
    return table;
  } catch (const TableError& e) {
    return Status::invalid(e.message);
  } catch (const nlohmann::json::exception& e) {
    return Status::invalid(fmt::format("{}: {}", path, e.what()));
  }
}

}  // namespace convjit
