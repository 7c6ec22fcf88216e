// setmaxnreg (common/warpgroup.cuh) in the emulator: each warp's register
// count as its setmaxnreg instructions set it, checked against the PTX
// ISA's rules.  A warp's instruction completes as a warp collective (every
// lane runs it, with one count); then
//   - .inc must not lower the warp's count, nor .dec raise it;
//   - the block must be made of whole warpgroups;
//   - at the block's end, every warp of a warpgroup must have run the same
//     sequence of them.
// The count a warp starts with is ptxas's, which the emulator does not
// know: the first instruction of a warp is checked for its range only.
#pragma once

#include <vector>

#include "dispatcher/backends/emulator/warp_collective.hpp"

namespace convjit::emulator {

struct SetmaxnregPayload {
  bool increase = false;
  unsigned registers = 0;
};

// The collective's completion (warp_operations.cpp's kind).
void complete_setmaxnreg(const WarpLanes& lanes);

class WarpgroupRegisters {
 public:
  void reset(unsigned threads);
  // Warp `warp`'s instruction, from its lane `first_thread`'s completion.
  void apply(unsigned warp, unsigned first_thread, const SetmaxnregPayload& step);
  // At the block's end.
  void report_mismatches() const;

 private:
  struct Step {
    bool increase;
    unsigned registers;
    bool operator==(const Step&) const = default;
  };
  unsigned threads_ = 0;
  std::vector<std::vector<Step>> steps_;  // per warp
};

}  // namespace convjit::emulator
