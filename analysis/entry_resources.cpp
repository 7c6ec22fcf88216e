#include "analysis/entry_resources.hpp"

#include <regex>
#include <sstream>

namespace convjit::analysis {

namespace {

long long captured(const std::string& line, const std::regex& pattern, long long fallback = 0) {
  std::smatch m;
  return std::regex_search(line, m, pattern) ? std::stoll(m[1]) : fallback;
}

}  // namespace

std::vector<EntryResources> parse_entry_resources(const std::string& log) {
  static const std::regex entry(R"(Compiling entry function '([^']+)' for '([^']+)')");
  static const std::regex properties(R"(Function properties for (\S+))");
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex registers(R"(Used (\d+) registers)");
  static const std::regex barriers(R"(used (\d+) barriers)");
  static const std::regex cumulative(R"((\d+) bytes cumulative stack size)");
  static const std::regex shared(R"((\d+) bytes smem)");
  std::vector<EntryResources> entries;
  EntryResources* current = nullptr;  // the entry whose lines follow
  bool frame_is_current = false;      // the next frame line is the current entry's
  std::istringstream lines(log);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, entry)) {
      current = &entries.emplace_back(EntryResources{.name = m[1], .arch = m[2]});
      frame_is_current = false;
    } else if (std::regex_search(line, m, properties)) {
      frame_is_current = current != nullptr && m[1] == current->name;
    } else if (std::regex_search(line, m, frame)) {
      if (!frame_is_current) continue;
      current->stack_bytes = std::stoll(m[1]);
      current->spill_store_bytes = std::stoll(m[2]);
      current->spill_load_bytes = std::stoll(m[3]);
      frame_is_current = false;
    } else if (current != nullptr && std::regex_search(line, m, registers)) {
      current->registers = static_cast<int>(std::stoll(m[1]));
      current->barriers = static_cast<int>(captured(line, barriers));
      current->cumulative_stack_bytes = captured(line, cumulative, current->stack_bytes);
      current->shared_bytes = captured(line, shared);
    }
  }
  return entries;
}

}  // namespace convjit::analysis
