// nvdisasm's listing read back into functions of instructions, with the
// labels branches name, so that loops can be found by their backward
// branches.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace convjit::analysis {

struct SassInstruction {
  unsigned offset = 0;   // bytes from the function's start
  std::string opcode;    // with its modifiers: "HMMA.16816.F32.BF16"
  std::string operands;  // as listed, without the trailing ';'
  std::string target;    // a branch's label, else empty
  bool predicated = false;
  // "HMMA" of "HMMA.16816.F32.BF16".
  [[nodiscard]] std::string mnemonic() const { return opcode.substr(0, opcode.find('.')); }
};

struct SassFunction {
  std::string name;
  std::vector<SassInstruction> code;
  std::map<std::string, std::size_t> labels;  // label -> index of the instruction it precedes
};

// The functions of an `nvdisasm -c` listing, in its order.
[[nodiscard]] std::vector<SassFunction> parse_sass(const std::string& listing);

}  // namespace convjit::analysis
