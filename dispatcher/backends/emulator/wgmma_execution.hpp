// wgmma (common/wgmma.cuh) in the emulator.  A warpgroup's
// wgmma.mma_async completes warp by warp, each as a warp collective that
// computes the warp's 16 rows of the 64 x N result: A's rows from shared
// memory through its descriptor (or from the lanes' registers), all of B
// through its descriptor (wgmma_layout.hpp), exact products summed in f64
// and rounded once, as mma.sync's emulation does (tf32 inputs keep their
// top 19 bits).  Then:
//   - the results wait in the accumulators, which may not be read or
//     written until a wgmma.wait_group covers the wgmma's commit group;
//   - the shared operands are read by the async proxy until then: writing
//     them is reported, and their writers must have run fence.proxy.async;
//   - a thread's first wgmma, and one after its accumulators were
//     accessed, needs a wgmma.fence before it;
//   - every lane gives the same operands, and the warps of a warpgroup run
//     the same wgmma instructions (warpgroup_instructions.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dispatcher/backends/emulator/warp_collective.hpp"

namespace convjit::emulator {

class SharedRegion;

enum class WgmmaType : std::uint8_t { f16, bf16, tf32 };

// A thread's accumulators (wgmma_accumulators<N> in the emulator): their
// values, and what the checks need.
struct AccumulatorGuard {
  float* values = nullptr;
  unsigned count = 0;  // N / 2
  bool pending = false;
  // The thread's wgmma.fence count + 1 at the last access; 0: none.
  std::uint32_t accessed_after = 0;
};

struct WgmmaPayload {
  unsigned n = 8;
  WgmmaType type = WgmmaType::f16;
  bool trans_a = false, trans_b = false;  // MN-major operands
  bool accumulate = false;                // scale-d: D = A B + D
  std::uint64_t a_descriptor = 0, b_descriptor = 0;
  const unsigned* a_registers = nullptr;  // the register-A form
  AccumulatorGuard* d = nullptr;
};

// The collectives' completions (warp_operations.cpp's kind).
void complete_wgmma(const WarpLanes& lanes);
void complete_wgmma_fence(const WarpLanes& lanes);
void complete_wgmma_commit(const WarpLanes& lanes);
struct WgmmaWaitPayload {
  unsigned newest = 0;
};
void complete_wgmma_wait(const WarpLanes& lanes);

// One thread's wgmmas in flight: its fences, its open commit group, the
// accumulators and shared operands its wgmmas hold.
class WgmmaThreadState {
 public:
  [[nodiscard]] std::uint32_t fences() const { return fences_; }
  void fence() { ++fences_; }
  void commit() { ++open_group_; }
  void hold(AccumulatorGuard* d);
  void hold_read(SharedRegion* region, long long element);
  // wgmma.wait_group `newest`: the wgmmas of every committed group but the
  // `newest` most recent ones are done.
  void wait(unsigned newest);
  // The accumulators' end of life; false if a wgmma still held them.
  bool forget(const AccumulatorGuard* d);
  [[nodiscard]] std::size_t in_flight() const { return accumulators_.size(); }
  // Releases everything held (the thread returned).
  void clear();

 private:
  struct Held {
    AccumulatorGuard* d;
    std::uint64_t group;
  };
  struct Read {
    SharedRegion* region;
    long long element;
    std::uint64_t group;
  };
  std::uint32_t fences_ = 0;
  std::uint64_t open_group_ = 0;
  std::vector<Held> accumulators_;
  std::vector<Read> reads_;
};

// An accumulator register's access by the running thread: reported while
// a wgmma holds it; remembered for the next wgmma's fence check.
void access_accumulator(AccumulatorGuard& d, unsigned index, bool write);

}  // namespace convjit::emulator
