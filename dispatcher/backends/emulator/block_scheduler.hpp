// Runs one block of an emulated kernel, or one cluster of blocks, on the
// calling host thread: each CUDA thread is a fiber, run until it finishes,
// reaches __syncthreads(), barrier.cluster, a warp collective or an
// mbarrier wait whose phase is not complete.  A barrier opens once every
// thread of its block (or cluster) waits at it; a warp collective
// completes once every lane of its mask waits at it (warp_collective.hpp).
// Each block's shared memory lives here too, with a shadow per element
// that catches out-of-bounds indices, reads of never-written elements and
// races: two threads touching an element between the same two barriers,
// at least one of them writing, unless an mbarrier orders them (the first
// thread arrived after its access, the second waited for that phase before
// its own).
//
// In a cluster (common/cluster.cuh), the threads are numbered across it
// (rank * blockDim + threadIdx), so that one ordering clock spans the
// cluster: an arrival on another block's mbarrier and a TMA load multicast
// into another block's shared memory are ordered as within a block.  Each
// block keeps its own barrier intervals.
#pragma once

#include <boost/context/fiber.hpp>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dispatcher/backends/emulator/access_recorder.hpp"
#include "dispatcher/backends/emulator/async_copy.hpp"
#include "dispatcher/backends/emulator/emulated_buffers.hpp"
#include "dispatcher/backends/emulator/fiber_stack_pool.hpp"
#include "dispatcher/backends/emulator/mbarrier_table.hpp"
#include "dispatcher/backends/emulator/stack_switch_annotations.hpp"
#include "dispatcher/backends/emulator/warp_collective.hpp"
#include "dispatcher/backends/emulator/warpgroup_instructions.hpp"
#include "dispatcher/backends/emulator/wgmma_execution.hpp"

namespace convjit::emulator {

class BlockScheduler;

// Who writes a shared element asynchronously: a thread's cp.async, or a
// TMA load (common/tma.cuh), whose bytes land through an mbarrier.
enum class AsyncWriter : std::uint8_t { cp_async, tma };
// Who reads one asynchronously, through the async proxy: a TMA store's
// source, or a wgmma's operand (common/wgmma.cuh).
enum class AsyncReader : std::uint8_t { tma_store, wgmma };

// One __shared__ array of the running block.
class SharedRegion {
 public:
  SharedRegion(BlockScheduler& block, std::uint32_t id, const char* name, int line, long long count,
               std::size_t element_bytes, std::size_t alignment = 16, bool dynamic = false,
               unsigned rank = 0);

  // The element's address, or null (after a report) when the access must
  // not happen.  Atomic accesses are bounds-checked only.
  void* element(long long index, Access access) noexcept;

  // cp.async: `count` elements from `first` are marked in flight, checked
  // as a write by the issuing thread; landing writes them, as that thread.
  // begin_async_write returns false (after a report) if the copy must not
  // be issued.
  bool begin_async_write(long long first, long long count,
                         AsyncWriter writer = AsyncWriter::cp_async) noexcept;
  void land_async_write(long long first, long long count, const std::byte* data) noexcept;
  // A TMA load's bytes landing: written by the async proxy `agent` (a
  // pseudo-thread of the block scheduler) at `agent_epoch`, which the
  // mbarrier the load completes on releases to its waiters.
  void land_bulk_write(long long first, long long count, const std::byte* data,
                       std::int32_t agent, std::uint32_t agent_epoch) noexcept;
  // A TMA store's source or a wgmma's operand: checked as a read by the
  // running thread, whose writers must have fenced the async proxy; writes
  // are refused until as many end_async_read()s (cp.async.bulk.wait_group.read,
  // wgmma.wait_group).  False after a report.  `used`, where given (a
  // flag per element from `first`), names the elements whose values the
  // read uses: a TMA store's box elements past the tensor are read but
  // never written to it, so they need no writer.
  bool begin_async_read(long long first, long long count,
                        AsyncReader reader = AsyncReader::tma_store,
                        std::span<const std::uint8_t> used = {}) noexcept;
  void end_async_read(long long first, long long count) noexcept;
  // The bytes of the elements from `first`, for an async read that
  // begin_async_read() admitted.
  [[nodiscard]] const std::byte* raw(long long first) const {
    return data_.data() + static_cast<std::size_t>(first) * element_bytes_;
  }

  [[nodiscard]] std::size_t element_bytes() const { return element_bytes_; }
  [[nodiscard]] const char* name() const { return name_; }
  [[nodiscard]] int line() const { return line_; }
  [[nodiscard]] long long count() const { return count_; }
  // What the array was declared aligned to (CONVJIT_SHARED_ARRAY_ALIGNED).
  [[nodiscard]] std::size_t alignment() const { return alignment_; }
  [[nodiscard]] std::uint32_t id() const { return id_; }  // in the order the block declared it
  // The block of the cluster whose array it is (0 outside a cluster).
  [[nodiscard]] unsigned rank() const { return rank_; }
  [[nodiscard]] bool declared_at(const char* name, int line) const {
    return name_ == name && line_ == line;
  }
  [[nodiscard]] bool fits(long long count, std::size_t element_bytes, std::size_t alignment,
                          bool dynamic) const {
    return count_ == count && element_bytes_ == element_bytes && alignment_ == alignment &&
           dynamic_ == dynamic;
  }
  [[nodiscard]] bool dynamic() const { return dynamic_; }  // CONVJIT_DYNAMIC_SHARED_ARRAY's
  // The first declaration in the running block; false after.
  bool declare() { return !std::exchange(declared_, true); }
  [[nodiscard]] bool declared() const { return declared_; }
  // Its address in the block's shared window (the order and alignment of
  // the declarations), for the addresses PTX takes (wgmma's descriptors).
  [[nodiscard]] std::uint32_t base() const { return base_; }
  void set_base(std::uint32_t base) { base_ = base; }
  [[nodiscard]] std::size_t bytes() const {
    return static_cast<std::size_t>(count_) * element_bytes_;
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
    std::int32_t in_flight_by = -1;  // the thread whose cp.async or TMA load has not landed
    std::int32_t async_reader = -1;  // the last thread whose async read is unfinished
    std::uint16_t async_reads = 0;   // unfinished async reads
    AsyncReader async_reader_kind = AsyncReader::tma_store;
    std::uint32_t writer_fences = 0;  // the writer's fence.proxy.async count at the write
    std::uint32_t writer_epoch = 0;  // the writer's epoch at the write
    std::uint32_t reader_epoch = 0;  // the reader's at its last read
    std::int32_t readers = -1;       // kManyReaders' entry in reader_lists_, when kept
    bool mbarrier = false;
    AsyncWriter in_flight_kind = AsyncWriter::cp_async;
  };
  static constexpr std::int32_t kManyReaders = -2;
  bool check_race(Shadow& s, long long index, Access access) noexcept;
  void record_read(Shadow& s, std::int32_t me, std::uint32_t now);
  [[nodiscard]] bool reads_ordered(const Shadow& s, std::int32_t me) const;
  bool check_bounds(long long first, long long count) noexcept;
  bool check_async_reader(const Shadow& s, long long index, Access access) noexcept;
  bool check_proxy_fence(const Shadow& s, long long index) noexcept;

  BlockScheduler& block_;
  std::uint32_t id_;
  const char* name_;
  int line_;
  long long count_;
  std::size_t element_bytes_;
  std::size_t alignment_;
  bool dynamic_;
  unsigned rank_;
  bool declared_ = false;
  std::uint32_t base_ = 0;
  std::vector<std::byte> data_;
  std::vector<Shadow> shadow_;
  // Several readers of one element in one interval, each with its epoch:
  // kept once mbarriers order accesses, so a write can be checked against each.
  std::vector<std::vector<std::pair<std::int32_t, std::uint32_t>>> reader_lists_;
};

// A TMA load in flight: its bytes, in the destination's element order,
// land when every thread of the block waits (BlockScheduler), then
// complete their transaction bytes on the mbarrier.
struct BulkLoad {
  SharedRegion* region = nullptr;
  long long first = 0;  // elements
  long long count = 0;
  std::vector<std::byte> data;
  MbarrierKey bar;
  unsigned issuer = 0;
};

// A thread's TMA stores whose shared source is still read, by bulk group
// (cp.async.bulk.commit_group closes one).
struct BulkStoreGroups {
  struct Source {
    SharedRegion* region;
    long long first, count;
    std::uint64_t group;
  };
  std::vector<Source> reading;
  std::uint64_t open_group = 0;
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

  // Runs `body(context)` as every thread of the `cluster` blocks from
  // `first_block` together (`threads` in a block, whole warps where
  // `cluster` > 1; `blocks` in the grid) and returns when all have
  // finished.  A lone block is a cluster of 1.
  void run_cluster(unsigned first_block, unsigned cluster, unsigned blocks, unsigned threads,
                   Body body, const void* context);

  // Called by emulated threads.
  void barrier(int line);
  // barrier.cluster.arrive.release then barrier.cluster.wait.acquire.
  void cluster_barrier();
  // %cluster_ctarank and %cluster_nctarank.
  [[nodiscard]] unsigned running_rank() const { return running_rank_; }
  [[nodiscard]] unsigned cluster_blocks() const { return cluster_; }
  // The grid's index of the cluster's block `rank`.
  [[nodiscard]] unsigned cluster_block(unsigned rank) const { return first_block_ + rank; }
  // mapa: `region`'s array in block `rank` of the cluster; null after a
  // report (no such block, or it has not declared the array yet).
  [[nodiscard]] SharedRegion* peer_region(const SharedRegion& region, unsigned rank);
  // The running thread's operation on an mbarrier of another block of the
  // cluster: false after a report where that block has returned, or no
  // barrier.cluster since the barrier's init has made it visible.
  bool check_remote(const MbarrierKey& key, const char* operation);
  // ld.shared::cluster by the running thread of `region`'s array in another
  // block of the cluster: false after a report where that block has
  // returned; else noted, to be ordered before that block returns.
  bool check_remote_read(const SharedRegion& region);
  // mbarrier.arrive.release.cluster.shared::cluster by the running thread,
  // on a barrier of its own block or another's (check_remote).
  std::uint64_t mbarrier_arrive_cluster(const MbarrierKey& key);
  void arrive(WarpArrival& arrival);
  [[nodiscard]] unsigned live_lanes(unsigned warp) const;
  [[nodiscard]] AsyncCopies& async_copies() { return threads_[running_].copies; }
  // The array declared at `name` and `line`, as every thread of the block
  // declares it; its first declaration in a block counts its bytes
  // against the static (48 KiB) and total (227 KiB) limits.
  SharedRegion& shared_region(const char* name, int line, long long count,
                              std::size_t element_bytes, std::size_t alignment = 16,
                              bool dynamic = false);

  // mbarriers (common/mbarrier.cuh), as the running thread.  A wait
  // suspends it until the phase completes; a wait no thread can end is
  // reported as a deadlock, and then returns as if it had.
  void mbarrier_init(const MbarrierKey& key, long long count);
  void mbarrier_inval(const MbarrierKey& key);
  std::uint64_t mbarrier_arrive(const MbarrierKey& key, long long count);
  bool mbarrier_wait(const MbarrierKey& key, unsigned parity);
  [[nodiscard]] MbarrierTable& mbarriers() { return mbarriers_; }

  // TMA (common/tma.cuh), as the running thread.  A load lands once every
  // thread waits (at an mbarrier, a barrier or a warp collective) and one
  // waits at an mbarrier: as late as the GPU may land it.
  void issue_bulk_load(BulkLoad load);
  [[nodiscard]] BulkStoreGroups& bulk_stores() { return threads_[running_].stores; }
  // cp.async.bulk.wait_group[.read] `newest`: the stores of every committed
  // group but the `newest` most recent ones release their sources.
  void wait_bulk_stores(unsigned newest);
  void fence_proxy_async() { ++threads_[running_].proxy_fences; }
  // fence.proxy.async.shared::cta count of `thread` so far (0 for an
  // async-proxy agent, whose writes need no fence).
  [[nodiscard]] std::uint32_t proxy_fences(std::int32_t thread) const;
  // "thread 5", or "a TMA load" for an async-proxy agent.
  [[nodiscard]] std::string who(std::int32_t thread) const;
  [[nodiscard]] unsigned threads() const { return static_cast<unsigned>(threads_.size()); }
  [[nodiscard]] WarpgroupInstructions& warpgroup_instructions() { return warpgroups_; }
  [[nodiscard]] WgmmaThreadState& wgmma_state(unsigned thread) { return threads_[thread].wgmma; }
  // The array declared in this block holding shared address `address`,
  // or null.
  [[nodiscard]] SharedRegion* region_at(std::uint32_t address) const;

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
  // Barrier intervals are numbered from 1 within each block.
  [[nodiscard]] std::uint32_t interval(unsigned rank) const { return ctas_[rank].interval; }

 private:
  struct ThreadSlot {
    boost::context::fiber fiber;
    boost::context::fiber scheduler;  // where the thread returns to
    boost::context::stack_context stack;
    void* fake_stack = nullptr;  // ASan's, while the thread waits
    int barrier_line = 0;
    bool waiting = false;          // at __syncthreads()
    bool cluster_waiting = false;  // at barrier.cluster
    bool done = false;
    WarpArrival* arrival = nullptr;  // waiting at a warp collective
    AsyncCopies copies;
    std::optional<std::pair<MbarrierKey, unsigned>> mbarrier_wait;  // the barrier and parity
    bool wait_broken = false;  // released from a deadlocked wait
    std::uint32_t epoch = 1;   // advances at each of its mbarrier arrivals
    OrderClock knows;          // see mbarrier_table.hpp
    BulkStoreGroups stores;
    std::uint32_t proxy_fences = 0;
    WgmmaThreadState wgmma;
  };
  struct RemoteAccess {
    std::int32_t thread;
    std::uint32_t epoch;
    std::string what;
  };
  // A block of the cluster: its shared arrays (kept from block to block,
  // reset), what it declared, its barrier intervals and returned threads.
  struct Cta {
    std::vector<std::unique_ptr<SharedRegion>> shared;
    std::vector<RemoteAccess> remote;  // by other blocks, not yet ordered before its return
    std::size_t static_shared_bytes = 0, dynamic_shared_bytes = 0;
    std::uint32_t next_shared_address = 0;
    std::uint32_t interval = 1;
    unsigned returned = 0;  // threads
    void reset();
  };
  [[nodiscard]] std::uint32_t shared_region_id(const char* name, int line) const;
  void start_threads(unsigned threads, Body body, const void* context);
  bool step();
  void resume(unsigned thread);
  void yield(ThreadSlot& self);
  [[nodiscard]] bool runnable(unsigned thread) const;
  [[nodiscard]] bool rank_returned(unsigned rank) const;
  // `access` to block `rank`: false after a report where it has returned.
  bool check_alive(unsigned rank, std::string_view access);
  bool settle_warps(bool release_stuck);
  bool wake_mbarrier_waits();
  [[nodiscard]] bool any_mbarrier_wait() const;
  bool open_barriers();
  bool open_barrier(unsigned rank);
  bool open_cluster_barrier();
  bool release_divergent_barriers();
  bool land_bulk_loads();
  void count_shared_bytes(const SharedRegion& region);
  std::int32_t async_agent(const MbarrierKey& key);
  void report_unfinished_copies(ThreadSlot& t);
  // An access to block `rank`'s shared memory by `thread` (or an async
  // agent) of another block at `epoch`, `what` naming it: it must be
  // ordered before that block returns (a barrier.cluster, or a wait of
  // that block's that acquires it), else it is reported when the block
  // returns.
  void note_remote(unsigned rank, std::int32_t thread, std::uint32_t epoch, std::string what);
  void retire_remote_accesses(unsigned thread);
  bool report_deadlock();
  bool settle_warp(unsigned warp, bool release_stuck);
  void report_stuck(unsigned thread, const WarpArrival& arrival);
  void complete(const WarpArrival& leader, unsigned first_thread);
  void end_interval(unsigned rank);

  FiberStackPool stacks_;
  std::vector<ThreadSlot> threads_;
  StackBounds host_stack_;           // the stack run_cluster() runs on
  void* host_fake_stack_ = nullptr;  // ASan's, while a thread runs
  std::vector<Cta> ctas_;            // at least cluster_; the first cluster_ run
  unsigned first_block_ = 0;
  unsigned cluster_ = 1;
  unsigned block_threads_ = 0;
  unsigned running_ = 0;
  unsigned running_rank_ = 0;
  unsigned warps_ = 0;                  // in the cluster
  std::uint64_t cluster_barriers_ = 0;  // opened in this cluster
  // The cluster barriers opened before each live mbarrier's init, where
  // the cluster has more than one block: a remote operation needs a later one.
  std::map<MbarrierKey, std::uint64_t> inits_;
  AccessRecorder* recorder_ = nullptr;
  MbarrierTable mbarriers_;
  bool mbarriers_used_ = false;  // in this block
  std::vector<BulkLoad> bulk_loads_;
  WarpgroupInstructions warpgroups_;
  // The async proxy's writes through each mbarrier, as pseudo-threads
  // numbered after the block's threads: the barriers and their epochs.
  std::vector<MbarrierKey> agents_;
  std::vector<std::uint32_t> agent_epochs_;
};

// What __syncthreads() expands to in the emulator.
void block_barrier(int line);

}  // namespace convjit::emulator
