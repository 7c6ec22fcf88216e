// Warp-synchronous collectives in the emulator: shuffles, votes,
// __syncwarp, ldmatrix and mma.sync all wait until every lane their mask
// names has arrived, then complete at once, as on the GPU.  A block's
// threads form warps of 32 (lane = threadIdx.x % 32; launches are 1D).
//
// A lane arrives with a WarpArrival that lives on its own stack while it
// waits; the block scheduler completes the collective once every lane of
// the mask waits at the same one (same operation, source line and mask).
// Lanes of one mask that reach different collectives, or return, are a
// divergence: it is reported, and the lanes that did arrive complete
// without the others, whose contributions read as poison.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace convjit::emulator {

inline constexpr unsigned kWarpSize = 32;
inline constexpr unsigned kFullWarp = 0xffffffffu;

struct WarpArrival;

// The lanes of one collective as it completes, by lane: null for lanes
// outside the mask or, after a divergence, lanes that never arrived.
struct WarpLanes {
  unsigned first_thread = 0;  // the warp's lane 0, as a thread of the block
  unsigned mask = 0;
  std::array<WarpArrival*, kWarpSize> lane{};
};

using CompleteCollective = void (*)(const WarpLanes& lanes);

struct WarpArrival {
  std::string_view name;  // "__shfl_sync", "mma.sync.m16n8k16 (f16)", ...
  int line = 0;           // in the template, where the name alone is ambiguous
  unsigned mask = kFullWarp;
  CompleteCollective complete = nullptr;
  void* payload = nullptr;

  [[nodiscard]] bool same_collective(const WarpArrival& other) const {
    return complete == other.complete && name == other.name && line == other.line &&
           mask == other.mask;
  }
};

// Called by an emulated thread: waits at the collective until it completes.
void warp_collective(WarpArrival& arrival);

// The running thread's lane, and the lanes of its warp that have not
// returned (what __activemask() gives in the emulator, which has no other
// notion of convergence).
[[nodiscard]] unsigned running_lane();
[[nodiscard]] unsigned live_lanes_of_running_warp();

// ---- implementation --------------------------------------------------------

void enter_thread(unsigned thread);  // sets the running thread and threadIdx
[[nodiscard]] unsigned running_thread_index();

// Runs `f` attributed to thread `thread` of the running block (reports
// and shared-memory checks name it), from inside a completion.
template <class F>
void as_thread(unsigned thread, F&& f) {
  const unsigned saved = running_thread_index();
  enter_thread(thread);
  f();
  enter_thread(saved);
}

}  // namespace convjit::emulator
