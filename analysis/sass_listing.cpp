#include "analysis/sass_listing.hpp"

#include <regex>
#include <sstream>

namespace convjit::analysis {

std::vector<SassFunction> parse_sass(const std::string& listing) {
  static const std::regex function_start(R"(^\.text\.(\S+):\s*$)");
  static const std::regex label(R"(^(\.L_x_\d+):\s*$)");
  // /*0730*/  @!P0 BRA `(.L_x_0) ;
  static const std::regex instruction(
      R"(^\s*/\*([0-9a-f]+)\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)\s*(.*?)\s*;)");
  static const std::regex branch_target(R"(`\((\.L_x_\d+)\))");
  std::vector<SassFunction> functions;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, function_start)) {
      functions.push_back(SassFunction{m[1], {}, {}});
    } else if (functions.empty()) {
      continue;
    } else if (std::regex_match(line, m, label)) {
      functions.back().labels[m[1]] = functions.back().code.size();
    } else if (std::regex_search(line, m, instruction)) {
      SassInstruction in{static_cast<unsigned>(std::stoul(m[1], nullptr, 16)), m[3], m[4], "",
                         m[2].matched};
      if (std::smatch t; std::regex_search(in.operands, t, branch_target)) in.target = t[1];
      functions.back().code.push_back(std::move(in));
    }
  }
  return functions;
}

}  // namespace convjit::analysis
