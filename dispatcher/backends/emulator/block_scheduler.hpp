// Runs one block of an emulated kernel on the calling host thread: each
// CUDA thread is a fiber, run until it finishes, reaches __syncthreads(),
// a warp collective or an mbarrier wait whose phase is not complete.  A
// barrier opens once every thread of the block waits at it; a warp
// collective completes once every lane of its mask waits at it
// (warp_collective.hpp).  The
// block's shared memory lives here too, with a shadow per element that
// catches out-of-bounds indices, reads of never-written elements and
// races: two threads touching an element between the same two barriers,
// at least one of them writing, unless an mbarrier orders them (the first
// thread arrived after its access, the second waited for that phase before
// its own).
#pragma once

#include <boost/context/fiber.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "dispatcher/backends/emulator/access_recorder.hpp"
#include "dispatcher/backends/emulator/async_copy.hpp"
#include "dispatcher/backends/emulator/emulated_buffers.hpp"
#include "dispatcher/backends/emulator/fiber_stack_pool.hpp"
#include "dispatcher/backends/emulator/mbarrier_table.hpp"
#include "dispatcher/backends/emulator/stack_switch_annotations.hpp"
#include "dispatcher/backends/emulator/warp_collective.hpp"

namespace convjit::emulator {

class BlockScheduler;

// One __shared__ array of the running block.
class SharedRegion {
 public:
  SharedRegion(BlockScheduler& block, std::uint32_t id, const char* name, int line,
               long long count, std::size_t element_bytes);

  // The element's address, or null (after a report) when the access must
  // not happen.  Atomic accesses are bounds-checked only.
  void* element(long long index, Access access) noexcept;

  // cp.async: `count` elements from `first` are marked in flight, checked
  // as a write by the issuing thread; landing writes them, as that thread.
  // begin_async_write returns false (after a report) if the copy must not
  // be issued.
  bool begin_async_write(long long first, long long count) noexcept;
  void land_async_write(long long first, long long count, const std::byte* data) noexcept;

  [[nodiscard]] std::size_t element_bytes() const { return element_bytes_; }
  [[nodiscard]] const char* name() const { return name_; }
  [[nodiscard]] int line() const { return line_; }
  [[nodiscard]] std::uint32_t id() const { return id_; }  // in the order the block declared it
  [[nodiscard]] bool declared_at(const char* name, int line) const {
    return name_ == name && line_ == line;
  }
  [[nodiscard]] bool fits(long long count, std::size_t element_bytes) const {
    return count_ == count && element_bytes_ == element_bytes;
  }
  void reset();  // a new block: poisoned contents, no history
  // An element that holds a live mbarrier: plain accesses to it are reported.
  void mark_mbarrier(long long index, bool live) noexcept;
  // At the end of a barrier interval: reports reads of elements that no
  // other thread wrote later in the interval (those were races, reported
  // at the write), so were never written at all.
  void report_unwritten_reads();

 private:
  struct Shadow {
    std::uint32_t write_interval = 0;  // 0: never written in this block
    std::int32_t writer = -1;
    std::uint32_t read_interval = 0;
    std::int32_t reader = -1;                   // kManyReaders when two or more read
    std::uint32_t unwritten_read_interval = 0;  // a read found it never written
    std::int32_t unwritten_reader = -1;
    std::int32_t in_flight_by = -1;  // the thread whose cp.async to it has not landed
    std::uint32_t writer_epoch = 0;  // the writer's epoch at the write
    std::uint32_t reader_epoch = 0;  // the reader's at its last read
    std::int32_t readers = -1;       // kManyReaders' entry in reader_lists_, when kept
    bool mbarrier = false;
  };
  static constexpr std::int32_t kManyReaders = -2;
  bool check_race(Shadow& s, long long index, Access access) noexcept;
  void record_read(Shadow& s, std::int32_t me, std::uint32_t now);
  [[nodiscard]] bool reads_ordered(const Shadow& s, std::int32_t me) const;
  bool check_bounds(long long first, long long count) noexcept;

  BlockScheduler& block_;
  std::uint32_t id_;
  const char* name_;
  int line_;
  long long count_;
  std::size_t element_bytes_;
  std::vector<std::byte> data_;
  std::vector<Shadow> shadow_;
  // Several readers of one element in one interval, each with its epoch:
  // kept once mbarriers order accesses, so a write can be checked against each.
  std::vector<std::vector<std::pair<std::int32_t, std::uint32_t>>> reader_lists_;
};

class BlockScheduler {
 public:
  using Body = void (*)(const void* context);

  BlockScheduler() = default;
  BlockScheduler(const BlockScheduler&) = delete;
  BlockScheduler& operator=(const BlockScheduler&) = delete;

  // The scheduler of the calling host thread.
  static BlockScheduler& for_this_thread();
  // The scheduler running the calling emulated thread.
  static BlockScheduler& current();

  // Runs `body(context)` as every thread of block `block` (threads in a
  // block, `blocks` in the grid) and returns when all have finished.
  void run_block(unsigned block, unsigned blocks, unsigned threads, Body body, const void* context);

  // Called by emulated threads.
  void barrier(int line);
  void arrive(WarpArrival& arrival);
  [[nodiscard]] unsigned live_lanes(unsigned warp) const;
  [[nodiscard]] AsyncCopies& async_copies() { return threads_[running_].copies; }
  SharedRegion& shared_region(const char* name, int line, long long count,
                              std::size_t element_bytes);

  // mbarriers (common/mbarrier.cuh), as the running thread.  A wait
  // suspends it until the phase completes; a wait no thread can end is
  // reported as a deadlock, and then returns as if it had.
  void mbarrier_init(const MbarrierKey& key, long long count);
  void mbarrier_inval(const MbarrierKey& key);
  std::uint64_t mbarrier_arrive(const MbarrierKey& key, long long count);
  bool mbarrier_wait(const MbarrierKey& key, unsigned parity);
  [[nodiscard]] MbarrierTable& mbarriers() { return mbarriers_; }

  // Whether the running thread's accesses are ordered after `other`'s of
  // `epoch` through an mbarrier; and its own epoch now.
  [[nodiscard]] bool ordered_after(std::int32_t other, std::uint32_t epoch) const;
  [[nodiscard]] std::uint32_t epoch() const { return threads_[running_].epoch; }
  [[nodiscard]] bool orders_by_mbarriers() const { return mbarriers_used_; }

  [[nodiscard]] unsigned running_thread() const { return running_; }
  void enter(unsigned thread);  // attributes what follows to `thread`
  // While set, every memory access is reported to `recorder`; null turns
  // that off.
  void set_recorder(AccessRecorder* recorder) { recorder_ = recorder; }
  [[nodiscard]] AccessRecorder* recorder() const { return recorder_; }
  // Barrier intervals are numbered from 1 within a block.
  [[nodiscard]] std::uint32_t interval() const { return interval_; }

 private:
  struct ThreadSlot {
    boost::context::fiber fiber;
    boost::context::fiber scheduler;  // where the thread returns to
    boost::context::stack_context stack;
    void* fake_stack = nullptr;  // ASan's, while the thread waits
    int barrier_line = 0;
    bool waiting = false;  // at __syncthreads()
    bool done = false;
    WarpArrival* arrival = nullptr;  // waiting at a warp collective
    AsyncCopies copies;
    std::optional<std::pair<MbarrierKey, unsigned>> mbarrier_wait;  // the barrier and parity
    bool wait_broken = false;  // released from a deadlocked wait
    std::uint32_t epoch = 1;   // advances at each of its mbarrier arrivals
    OrderClock knows;          // see mbarrier_table.hpp
  };
  void start_threads(unsigned threads, Body body, const void* context);
  void resume(unsigned thread);
  void yield(ThreadSlot& self);
  [[nodiscard]] bool runnable(unsigned thread) const;
  bool settle_warps();
  bool settle_mbarriers();
  void report_deadlock();
  bool settle_warp(unsigned warp, bool release_stuck);
  void report_stuck(unsigned thread, const WarpArrival& arrival);
  void complete(const WarpArrival& leader, unsigned first_thread);
  bool open_barrier();
  void end_interval();

  FiberStackPool stacks_;
  std::vector<ThreadSlot> threads_;
  StackBounds host_stack_;             // the stack run_block() runs on
  void* host_fake_stack_ = nullptr;  // ASan's, while a thread runs
  std::vector<std::unique_ptr<SharedRegion>> shared_;
  unsigned running_ = 0;
  unsigned warps_ = 0;  // in the block
  std::uint32_t interval_ = 1;
  AccessRecorder* recorder_ = nullptr;
  MbarrierTable mbarriers_;
  bool mbarriers_used_ = false;  // in this block
};

// What __syncthreads() expands to in the emulator.
void block_barrier(int line);

}  // namespace convjit::emulator
