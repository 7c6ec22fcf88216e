// The instructions a whole warpgroup runs together (setmaxnreg, and
// wgmma's fence, mma_async, commit_group and wait_group: .sync.aligned),
// in the emulator.  Each completes per warp, as a warp collective; this
// keeps each warp's sequence of them, so that at the block's end every
// warp of a warpgroup is found to have run the same ones (a warp that
// skipped or changed one diverged), and the block's warps' register
// counts with setmaxnreg's rules (common/warpgroup.cuh):
//   - every lane asks for one count;
//   - .inc must not lower the warp's count, nor .dec raise it;
//   - the block is made of whole warpgroups.
// The count a warp starts with is ptxas's, which the emulator does not
// know: the first setmaxnreg of a warp is checked for its range only.
#pragma once

#include <string>
#include <vector>

#include "dispatcher/backends/emulator/warp_collective.hpp"

namespace convjit::emulator {

inline constexpr unsigned kWarpsPerWarpgroup = 4;

struct SetmaxnregPayload {
  bool increase = false;
  unsigned registers = 0;
};

// setmaxnreg's collective completion (warp_operations.cpp's kind).
void complete_setmaxnreg(const WarpLanes& lanes);

class WarpgroupInstructions {
 public:
  void reset(unsigned threads);
  // Warp `warp` ran `instruction` ("wgmma.commit_group", ...); reported
  // from its lane `first_thread` if the block is not whole warpgroups.
  void note(unsigned warp, unsigned first_thread, std::string instruction);
  void setmaxnreg(unsigned warp, unsigned first_thread, const SetmaxnregPayload& step);
  // At the block's end.
  void report_mismatches() const;

 private:
  unsigned threads_ = 0;
  std::vector<std::vector<std::string>> log_;  // per warp
  std::vector<unsigned> registers_;            // per warp; 0 until a setmaxnreg
};

}  // namespace convjit::emulator
