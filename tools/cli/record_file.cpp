#include "record_file.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_status.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"

namespace convjit::cli {

std::vector<std::string> read_record_file(const std::string& path,
                                          std::vector<std::string>& problems) {
  if (std::error_code error; std::filesystem::is_directory(path, error))
    throw UsageError(fmt::format("{} is a directory; pass a record file written with "
                                 "CONVJIT_RECORD",
                                 path));
  std::ifstream in(path);
  if (!in) throw RuntimeError(fmt::format("cannot read the record file {}; check the path", path));
  std::vector<std::string> work;
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto json = nlohmann::json::parse(line, nullptr, false);
    if (!json.is_object() || !json.contains("name") || !json["name"].is_string()) {
      problems.push_back(
          fmt::format("{}:{}: not a JSON object with a \"name\"", path, line_number));
      continue;
    }
    auto desc = parse_descriptor_name(json["name"].get<std::string>());
    if (!desc.is_ok()) {
      problems.push_back(fmt::format("{}:{}: {}", path, line_number, desc.status().message()));
      continue;
    }
    work.push_back(json["name"].get<std::string>());
  }
  if (line_number == 0)
    throw RuntimeError(fmt::format(
        "the record file {} is empty; run the trainer with CONVJIT_RECORD={} first", path, path));
  return work;
}

}  // namespace convjit::cli
