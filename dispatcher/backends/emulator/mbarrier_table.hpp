// mbarrier objects in the emulator (PTX ISA, "Parallel Synchronization and
// Communication Instructions: mbarrier"): each live barrier of the running
// block, by its shared-memory element, with the state the ISA defines:
//   - the current phase (its parity is what try_wait.parity tests);
//   - the expected arrival count, set by init (1 to 2^20 - 1);
//   - the pending arrival count, reset to the expected one when a phase
//     completes;
//   - the transaction count (tx-count), raised by expect_tx and lowered by
//     complete_tx (a TMA copy's bytes), within +-(2^20 - 1).
// A phase completes when no arrival is pending and the tx-count is zero.
//
// What the ISA leaves undefined is reported: an arrival beyond the
// phase's expected count, a tx-count out of range, init of a live barrier
// (memory reused without mbarrier.inval), and any operation on memory that
// holds no live barrier.  A wait for the parity of the phase before the
// current one passes at once, as the ISA says, also in the first phase
// (producers rely on it for their first wait on an empty stage): a wait on
// the wrong phase shows up as the accesses it fails to order (a race with
// the arrivals' writes) or as a deadlock.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace convjit::emulator {

class SharedRegion;

// One barrier: its shared array and element.
struct MbarrierKey {
  SharedRegion* region = nullptr;
  long long index = 0;
  friend auto operator<=>(const MbarrierKey&, const MbarrierKey&) = default;
};

// What a thread knows of the others' shared-memory accesses: for each
// thread, the epoch up to which its accesses are ordered before this one's
// (0: none).  An arrival releases the arriving thread's knowledge, its own
// epoch included; a wait that sees the phase complete acquires the union
// of the phase's arrivals.
using OrderClock = std::vector<std::uint32_t>;

// Joins `from` into `into` (the larger epoch per thread).
void join_clock(OrderClock& into, const OrderClock& from);

class MbarrierTable {
 public:
  // Each returns false after a report when the operation must not apply.
  bool init(const MbarrierKey& key, long long count);
  bool inval(const MbarrierKey& key);
  // Returns the phase the arrival counted for (PTX's opaque state).
  // `released` is what the arriving thread knows, its own epoch included.
  std::uint64_t arrive(const MbarrierKey& key, long long count, const OrderClock& released);
  bool expect_tx(const MbarrierKey& key, long long bytes);
  // `released`: what the completing copy's writes make known (a TMA load's
  // async-proxy agent), or null.
  bool complete_tx(const MbarrierKey& key, long long bytes, const OrderClock* released = nullptr);

  // Whether the phase of parity `parity` has completed: the current phase's
  // parity differs.  False with a report, and `valid` false (the wait must
  // not block), for a parity other than 0 or 1 or a dead barrier.
  [[nodiscard]] bool phase_complete(const MbarrierKey& key, unsigned parity, bool& valid) const;
  // The same without reports, for the scheduler's polling.
  [[nodiscard]] bool phase_complete(const MbarrierKey& key, unsigned parity) const;
  [[nodiscard]] bool live(const MbarrierKey& key) const { return barriers_.count(key) != 0; }
  // What the arrivals of the last completed phase released (empty if none).
  [[nodiscard]] const OrderClock& released(const MbarrierKey& key) const;
  // "bars[0]: phase 3, 2 of 4 arrivals and 1024 transaction bytes missing".
  [[nodiscard]] std::string describe(const MbarrierKey& key) const;

  void reset() { barriers_.clear(); }

 private:
  struct State {
    std::uint64_t phase = 0;
    long long expected = 0;
    long long pending = 0;
    long long tx = 0;
    OrderClock gathering;  // the current phase's arrivals so far
    OrderClock released;   // the last completed phase's
  };
  State* find(const MbarrierKey& key, const char* operation);
  void complete_if_done(State& s);

  std::map<MbarrierKey, State> barriers_;
};

}  // namespace convjit::emulator
