// What a kernel's SASS spends its instructions on, over the whole function
// and per trip of its main loop: tensor-core math, shared- and global-memory
// traffic, and the integer and address arithmetic around them.  A main loop
// whose address arithmetic outweighs its MMAs cannot keep the tensor cores
// fed, whatever the memory system does.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/sass_listing.hpp"

namespace convjit::analysis {

enum class InstructionClass {
  mma,        // HMMA, IMMA, DMMA, HGMMA (wgmma)
  ldsm,       // ldmatrix
  ldgsts,     // cp.async
  lds,
  sts,
  ldg,
  stg,
  float_math,  // FFMA, FMUL, FADD, HFMA2, conversions
  integer,     // integer and address arithmetic, moves, predicates: I*, LEA, SHF, LOP3, SEL, U*
  barrier,     // BAR
  control,     // branches, convergence barriers, EXIT
  other,
};
inline constexpr int kInstructionClasses = 12;

[[nodiscard]] InstructionClass classify(const SassInstruction& in);
[[nodiscard]] const char* class_name(InstructionClass c);

// The bytes one thread's cp.async moves ("LDGSTS.E.BYPASS.LTC128B.128": 16).
[[nodiscard]] int ldgsts_bytes(const SassInstruction& in);

struct InstructionCounts {
  int count[kInstructionClasses] = {};
  long long ldgsts_bytes = 0;  // per thread
  int total = 0;
  [[nodiscard]] int of(InstructionClass c) const { return count[static_cast<int>(c)]; }
  void add(const SassInstruction& in);
};

// A loop: the instructions from a backward branch's target to the branch.
struct SassLoop {
  std::size_t first = 0, last = 0;  // indices into the function's code, inclusive
  unsigned first_offset = 0, last_offset = 0;
  int inner_loops = 0;  // counted once each in `counts`
  InstructionCounts counts;
  InstructionCounts outside_inner;  // the instructions in no inner loop
};

struct InstructionMix {
  std::string function;
  InstructionCounts whole;          // every instruction once, straight-line
  std::optional<SassLoop> main_loop;  // none in a loop-free kernel
};

// The main loop is the innermost of the loops with the most MMAs; in a
// kernel without MMAs in loops, of those with the most floating-point
// math; without either, of those with the most memory instructions.
[[nodiscard]] InstructionMix instruction_mix(const SassFunction& function);

}  // namespace convjit::analysis
