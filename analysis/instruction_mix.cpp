#include "analysis/instruction_mix.hpp"

#include <algorithm>
#include <array>
#include <string_view>

namespace convjit::analysis {

namespace {

bool starts_with_any(std::string_view mnemonic, std::initializer_list<std::string_view> prefixes) {
  for (std::string_view p : prefixes)
    if (mnemonic.starts_with(p)) return true;
  return false;
}

bool is_one_of(std::string_view mnemonic, std::initializer_list<std::string_view> names) {
  for (std::string_view n : names)
    if (mnemonic == n) return true;
  return false;
}

// What makes a loop the main one: its MMAs where the kernel has any in a
// loop, else its floating-point math, else its memory instructions.
int work(const InstructionCounts& c, int criterion) {
  using enum InstructionClass;
  if (criterion == 0) return c.of(mma);
  if (criterion == 1) return c.of(float_math);
  return c.of(ldsm) + c.of(ldgsts) + c.of(lds) + c.of(sts) + c.of(ldg) + c.of(stg);
}

}  // namespace

InstructionClass classify(const SassInstruction& in) {
  using enum InstructionClass;
  const std::string m = in.mnemonic();
  if (is_one_of(m, {"HMMA", "IMMA", "DMMA", "HGMMA", "IGMMA", "QGMMA", "BMMA"})) return mma;
  if (m == "LDSM") return ldsm;
  if (is_one_of(m, {"LDGSTS", "UTMALDG", "UBLKCP"})) return ldgsts;  // cp.async, TMA
  if (m == "LDS") return lds;
  if (m == "STS") return sts;
  if (is_one_of(m, {"LDG", "LD"})) return ldg;
  if (is_one_of(m, {"STG", "ST", "RED", "ATOMG", "ATOM"})) return stg;
  if (m == "BAR") return barrier;
  if (is_one_of(m, {"BRA", "BRX", "JMP", "CALL", "RET", "EXIT", "BSSY", "BSYNC", "BREAK", "WARPSYNC",
                    "YIELD", "NOP", "BPT"}))
    return control;
  if (starts_with_any(m, {"FFMA", "FMUL", "FADD", "FMNMX", "FSET", "FSEL", "FCHK", "HFMA", "HADD",
                          "HMUL", "MUFU", "F2F", "F2I", "I2F", "F2FP", "FRND", "DFMA", "DADD",
                          "DMUL"}))
    return float_math;
  if (starts_with_any(m, {"IMAD", "IADD", "IABS", "IMNMX", "ISETP", "LEA", "SHF", "SHL", "SHR",
                          "LOP", "SEL", "VIADD", "VIMNMX", "PRMT", "MOV", "CS2R", "S2R", "S2UR",
                          "PLOP3", "P2R", "R2P", "POPC", "FLO", "BREV", "LDC", "ULDC", "U", "R2UR",
                          "SGXT", "BMSK", "IDP", "ISCADD"}))
    return integer;
  return other;
}

const char* class_name(InstructionClass c) {
  static constexpr std::array<const char*, kInstructionClasses> names = {
      "mma", "ldsm", "ldgsts", "lds", "sts", "ldg", "stg", "float", "integer", "bar", "control",
      "other"};
  return names[static_cast<int>(c)];
}

int ldgsts_bytes(const SassInstruction& in) {
  // The access width is a numeric modifier ("LDGSTS.E.BYPASS.128.ZFILL");
  // 4 bytes without one.
  int bits = 32;
  std::string_view rest(in.opcode);
  for (std::size_t dot; (dot = rest.find('.')) != std::string_view::npos;) {
    rest.remove_prefix(dot + 1);
    const std::string_view modifier = rest.substr(0, rest.find('.'));
    if (modifier == "64" || modifier == "128") bits = modifier == "64" ? 64 : 128;
  }
  return bits / 8;
}

void InstructionCounts::add(const SassInstruction& in) {
  const InstructionClass c = classify(in);
  ++count[static_cast<int>(c)];
  ++total;
  if (c == InstructionClass::ldgsts) ldgsts_bytes += analysis::ldgsts_bytes(in);
}

InstructionMix instruction_mix(const SassFunction& function) {
  InstructionMix mix{function.name, {}, std::nullopt};
  for (const SassInstruction& in : function.code) mix.whole.add(in);
  std::vector<SassLoop> loops;
  for (std::size_t i = 0; i < function.code.size(); ++i) {
    const auto label = function.labels.find(function.code[i].target);
    if (function.code[i].target.empty() || label == function.labels.end() || label->second > i)
      continue;
    SassLoop loop{label->second, i, function.code[label->second].offset, function.code[i].offset,
                  0, {}, {}};
    for (std::size_t k = loop.first; k <= loop.last; ++k) loop.counts.add(function.code[k]);
    loops.push_back(loop);
  }
  for (SassLoop& loop : loops) {
    std::vector<bool> inner(loop.last - loop.first + 1, false);
    for (const SassLoop& other : loops)
      if (&other != &loop && other.first >= loop.first && other.last <= loop.last &&
          (other.first != loop.first || other.last != loop.last)) {
        ++loop.inner_loops;
        std::fill(inner.begin() + static_cast<std::ptrdiff_t>(other.first - loop.first),
                  inner.begin() + static_cast<std::ptrdiff_t>(other.last - loop.first + 1), true);
      }
    for (std::size_t k = loop.first; k <= loop.last; ++k)
      if (!inner[k - loop.first]) loop.outside_inner.add(function.code[k]);
  }
  // An enclosing loop holds its inner loops' work too: of the loops with
  // the most, the smallest is the main one.
  int criterion = 0;
  const auto most = [&](int c) {
    int best = 0;
    for (const SassLoop& loop : loops) best = std::max(best, work(loop.counts, c));
    return best;
  };
  while (criterion < 2 && most(criterion) == 0) ++criterion;
  const int best = most(criterion);
  if (best == 0) return mix;  // no loop does work (nvdisasm lists a trap loop after EXIT)
  for (const SassLoop& loop : loops)
    if (work(loop.counts, criterion) == best &&
        (!mix.main_loop || loop.last - loop.first < mix.main_loop->last - mix.main_loop->first))
      mix.main_loop = loop;
  return mix;
}

}  // namespace convjit::analysis
