#include "lbann/lbann_log.hpp"

#include <fmt/format.h>

#include <fstream>
#include <set>

#include "dispatcher/descriptor/descriptor_name.hpp"

namespace convjit {

namespace {

constexpr std::string_view kMiss = "[INFO] JIT-compiled convolution not found for ";

std::string_view trimmed(std::string_view text) {
  const auto first = text.find_first_not_of(" \t\r");
  if (first == std::string_view::npos) return {};
  return text.substr(first, text.find_last_not_of(" \t\r") - first + 1);
}

// "[<rank>] " right before the marker, as DiHydrogen's MPI print streams write it.
bool has_rank_prefix(std::string_view before) {
  if (before.size() < 4 || before.back() != ' ') return false;
  before.remove_suffix(1);
  if (before.back() != ']') return false;
  const auto open = before.rfind('[');
  if (open == std::string_view::npos || open + 2 > before.size() - 1) return false;
  const std::string_view rank = before.substr(open + 1, before.size() - open - 2);
  return rank.find_first_not_of("0123456789") == std::string_view::npos;
}

}  // namespace

LbannLogMisses read_lbann_log(const std::string& path) {
  LbannLogMisses misses;
  std::ifstream in(path);
  if (!in) {
    misses.problems.push_back(fmt::format("{}:0: cannot read the file; check the path", path));
    return misses;
  }
  std::set<std::string, std::less<>> seen;
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    const auto at = line.find(kMiss);
    if (at == std::string::npos) continue;
    ++misses.miss_lines;
    const std::string_view view(line);
    if (!has_rank_prefix(view.substr(0, at))) {
      misses.problems.push_back(fmt::format(
          "{}:{}: no \"[<rank>] \" before \"[INFO]\": not a line as DiHydrogen writes it", path,
          line_number));
      continue;
    }
    const std::string name(trimmed(view.substr(at + kMiss.size())));
    if (auto desc = parse_descriptor_name(name); !desc.is_ok()) {
      misses.problems.push_back(
          fmt::format("{}:{}: {}", path, line_number, desc.status().message()));
      continue;
    }
    if (seen.insert(name).second) misses.descriptors.push_back(name);
  }
  if (misses.miss_lines == 0 && misses.problems.empty())
    misses.problems.push_back(fmt::format(
        "{}:0: no line reads \"[<rank>] {}<descriptor>\"; run LBANN with DISTCONV_JIT_VERBOSE=1 "
        "and DISTCONV_JIT_CACHEPATH set, and pass its stderr",
        path, kMiss));
  return misses;
}

}  // namespace convjit
