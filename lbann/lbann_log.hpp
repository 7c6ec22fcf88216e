// The descriptors DiHydrogen's DaCe dispatcher missed, from an LBANN run's
// verbose log (DISTCONV_JIT_VERBOSE set): the lines
//   [<rank>] [INFO] JIT-compiled convolution not found for <descriptor>
// of any number of ranks, the descriptor being the symbolic name, the last
// DiHydrogen tried.  A launcher's own prefix (srun --label's "0: ") may come
// before; everything else in the log is ignored.
#pragma once

#include <string>
#include <vector>

namespace convjit {

struct LbannLogMisses {
  std::vector<std::string> descriptors;  // distinct, in the order first seen
  // "<file>:<line>: <why>" for lines that name a miss but hold no valid name
  // (two ranks' output interleaved, a cut line).
  std::vector<std::string> problems;
  std::size_t miss_lines = 0;  // duplicates included
};

// Throws nothing; a file that cannot be read is a problem with line 0.
[[nodiscard]] LbannLogMisses read_lbann_log(const std::string& path);

}  // namespace convjit
