// The emulator's side of common/wgmma.cuh: accumulators whose every access
// is checked, the shared window's addresses for the matrix descriptors,
// and each wgmma instruction as a warp collective (wgmma_execution.hpp).
// Included by device_runtime.hpp.
#pragma once

#include <array>
#include <cstdint>
#include <limits>

#include "dispatcher/backends/emulator/access_recorder.hpp"
#include "dispatcher/backends/emulator/block_scheduler.hpp"
#include "dispatcher/backends/emulator/wgmma_execution.hpp"

namespace convjit::emulated {

// A shared element's address in the block's shared window, as PTX's
// .shared addresses are (what a matrix descriptor encodes).
template <class T>
unsigned shared_address(SharedAddress<T> p) {
  return p.region().base() + static_cast<unsigned>(p.index() * static_cast<long long>(sizeof(T)));
}

// wgmma_accumulators<N>: a thread's N/2 f32 accumulator registers.
template <int N>
class WgmmaAccumulators {
  static_assert(N >= 8 && N <= 256 && N % 8 == 0, "wgmma's N is 8 to 256, a multiple of 8");

 public:
  class Ref {
   public:
    Ref(WgmmaAccumulators& d, int i) : d_(d), i_(i) {}
    operator float() const {
      emulator::access_accumulator(d_.guard_, static_cast<unsigned>(i_), false);
      return d_.values_[static_cast<std::size_t>(i_)];
    }
    Ref& operator=(float v) {
      emulator::access_accumulator(d_.guard_, static_cast<unsigned>(i_), true);
      d_.values_[static_cast<std::size_t>(i_)] = v;
      return *this;
    }
    Ref& operator+=(float v) { return *this = static_cast<float>(*this) + v; }

   private:
    WgmmaAccumulators& d_;
    int i_;
  };

  WgmmaAccumulators() {
    values_.fill(std::numeric_limits<float>::quiet_NaN());
    guard_.values = values_.data();
    guard_.count = N / 2;
  }
  ~WgmmaAccumulators() {
    emulator::BlockScheduler& block = emulator::BlockScheduler::current();
    if (!block.wgmma_state(block.running_thread()).forget(&guard_))
      emulator::report_violation(
          "wgmma accumulators go out of scope while a wgmma writes them: a wgmma.wait_group "
          "covering it is missing");
  }
  WgmmaAccumulators(const WgmmaAccumulators&) = delete;
  WgmmaAccumulators& operator=(const WgmmaAccumulators&) = delete;

  Ref operator[](int i) {
    if (i < 0 || i >= N / 2) {
      emulator::report_violation(fmt::format("indexes wgmma accumulator {} of {}", i, N / 2));
      i = 0;
    }
    return {*this, i};
  }
  [[nodiscard]] emulator::AccumulatorGuard* guard() { return &guard_; }

 private:
  std::array<float, N / 2> values_;
  emulator::AccumulatorGuard guard_;
};

namespace wgmma_ops {

inline void collective(const char* name, emulator::CompleteCollective complete, void* payload) {
  emulator::WarpArrival arrival{name, 0, emulator::kFullWarp, complete, payload};
  emulator::warp_collective(arrival);
}

inline void fence() {
  collective("wgmma.fence.sync.aligned", &emulator::complete_wgmma_fence, nullptr);
}
inline void commit() {
  collective("wgmma.commit_group.sync.aligned", &emulator::complete_wgmma_commit, nullptr);
}
inline void wait(unsigned newest) {
  emulator::WgmmaWaitPayload p{newest};
  collective("wgmma.wait_group.sync.aligned", &emulator::complete_wgmma_wait, &p);
}

template <int N>
void mma(WgmmaAccumulators<N>& d, emulator::WgmmaType type, std::uint64_t a_descriptor,
         const unsigned* a_registers, std::uint64_t b_descriptor, bool trans_a, bool trans_b,
         bool accumulate) {
  emulator::WgmmaPayload p{static_cast<unsigned>(N),
                           type,
                           trans_a,
                           trans_b,
                           accumulate,
                           a_descriptor,
                           b_descriptor,
                           a_registers,
                           d.guard()};
  emulator::note_wgmma(static_cast<unsigned>(N), type == emulator::WgmmaType::tf32 ? 8u : 16u);
  collective("wgmma.mma_async.sync.aligned", &emulator::complete_wgmma, &p);
}

}  // namespace wgmma_ops

}  // namespace convjit::emulated
