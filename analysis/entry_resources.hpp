// What each kernel entry of a module takes from an SM, as ptxas reports it
// when it writes the CUBIN (the -v lines of NVRTC's log): registers,
// barriers, static shared memory, stack and spills.  Exact: these are the
// compiled code's numbers, no GPU needed.
#pragma once

#include <string>
#include <vector>

namespace convjit::analysis {

struct EntryResources {
  std::string name;
  std::string arch;  // "sm_90", as ptxas compiled it
  int registers = 0;
  int barriers = 0;
  long long shared_bytes = 0;  // static shared memory
  long long stack_bytes = 0;   // the entry's own frame
  long long cumulative_stack_bytes = 0;  // with the functions it calls
  long long spill_store_bytes = 0;
  long long spill_load_bytes = 0;
  [[nodiscard]] bool spills() const { return spill_store_bytes + spill_load_bytes > 0; }
};

// The entries of an NVRTC log compiled with -Xptxas=-v, in the log's order.
// Functions that are not entries (non-inlined device functions) are left
// out; their stack counts in their callers' cumulative stack.
[[nodiscard]] std::vector<EntryResources> parse_entry_resources(const std::string& log);

}  // namespace convjit::analysis
