// Runs one block of an emulated kernel on the calling host thread: each
// CUDA thread is a fiber, run until it finishes or reaches __syncthreads(),
// and a barrier opens once every thread of the block waits at it.  The
// block's shared memory lives here too, with a shadow per element that
// catches out-of-bounds indices, reads of never-written elements and
// races: two threads touching an element between the same two barriers,
// at least one of them writing.
#pragma once

#include <boost/context/fiber.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "dispatcher/backends/emulator/emulated_buffers.hpp"
#include "dispatcher/backends/emulator/fiber_stack_pool.hpp"
#include "dispatcher/backends/emulator/stack_switch_annotations.hpp"

namespace convjit::emulator {

class BlockScheduler;

// One __shared__ array of the running block.
class SharedRegion {
 public:
  SharedRegion(BlockScheduler& block, const char* name, int line, long long count,
               std::size_t element_bytes);

  // The element's address, or null (after a report) when the access must
  // not happen.  Atomic accesses are bounds-checked only.
  void* element(long long index, Access access) noexcept;

  [[nodiscard]] bool declared_at(const char* name, int line) const {
    return name_ == name && line_ == line;
  }
  [[nodiscard]] bool fits(long long count, std::size_t element_bytes) const {
    return count_ == count && element_bytes_ == element_bytes;
  }
  void reset();  // a new block: poisoned contents, no history
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
  };
  static constexpr std::int32_t kManyReaders = -2;
  bool check_race(Shadow& s, long long index, Access access) noexcept;

  BlockScheduler& block_;
  const char* name_;
  int line_;
  long long count_;
  std::size_t element_bytes_;
  std::vector<std::byte> data_;
  std::vector<Shadow> shadow_;
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
  SharedRegion& shared_region(const char* name, int line, long long count,
                              std::size_t element_bytes);

  [[nodiscard]] unsigned running_thread() const { return running_; }
  // Barrier intervals are numbered from 1 within a block.
  [[nodiscard]] std::uint32_t interval() const { return interval_; }

 private:
  struct ThreadSlot {
    boost::context::fiber fiber;
    boost::context::fiber scheduler;  // where the thread returns to
    boost::context::stack_context stack;
    void* fake_stack = nullptr;  // ASan's, while the thread waits at a barrier
    int barrier_line = 0;
    bool waiting = false;
    bool done = false;
  };
  void start_threads(unsigned threads, Body body, const void* context);
  void resume(unsigned thread);
  bool open_barrier();
  void end_interval();

  FiberStackPool stacks_;
  std::vector<ThreadSlot> threads_;
  StackBounds host_stack_;             // the stack run_block() runs on
  void* host_fake_stack_ = nullptr;  // ASan's, while a thread runs
  std::vector<std::unique_ptr<SharedRegion>> shared_;
  unsigned running_ = 0;
  std::uint32_t interval_ = 1;
};

// What __syncthreads() expands to in the emulator.
void block_barrier(int line);

}  // namespace convjit::emulator
