#include "dispatcher/backends/emulator/block_scheduler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "dispatcher/backends/emulator/launch_context.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"

namespace convjit::emulator {

namespace {

thread_local BlockScheduler* running_scheduler = nullptr;

}  // namespace

// ---- shared memory ----------------------------------------------------------

SharedRegion::SharedRegion(BlockScheduler& block, std::uint32_t id, const char* name, int line,
                           long long count, std::size_t element_bytes, std::size_t alignment,
                           bool dynamic, unsigned rank)
    : block_(block),
      id_(id),
      name_(name),
      line_(line),
      count_(count),
      element_bytes_(element_bytes),
      alignment_(alignment),
      dynamic_(dynamic),
      rank_(rank),
      data_(static_cast<std::size_t>(count) * element_bytes),
      shadow_(static_cast<std::size_t>(count)) {
  reset();
}

void SharedRegion::reset() {
  declared_ = false;
  std::fill(data_.begin(), data_.end(), std::byte{0xff});  // NaN in every float format
  std::fill(shadow_.begin(), shadow_.end(), Shadow{});
  reader_lists_.clear();
}

void SharedRegion::mark_mbarrier(long long index, bool live) noexcept {
  if (index >= 0 && index < count_) shadow_[static_cast<std::size_t>(index)].mbarrier = live;
}

bool SharedRegion::check_bounds(long long first, long long count) noexcept {
  if (first >= 0 && count <= count_ && first <= count_ - count) return true;
  const long long bad = first < 0 ? first : std::max(first, count_);
  report_violation(fmt::format("indexes shared {}[{}] (declared line {}), outside its {} elements",
                               name_, bad, line_, count_));
  return false;
}

void* SharedRegion::element(long long index, Access access) noexcept {
  if (!check_bounds(index, 1)) return nullptr;
  const auto at = static_cast<std::size_t>(index);
  if (const std::int32_t copier = shadow_[at].in_flight_by; copier >= 0) {
    const char* verb = access == Access::read ? "reads" : "writes";
    if (shadow_[at].in_flight_kind == AsyncWriter::tma)
      report_violation(fmt::format(
          "{} shared {}[{}] while the TMA load thread {} issued to it is in flight: wait for the "
          "phase of the mbarrier it completes on before the access",
          verb, name_, index, copier));
    else
      report_violation(fmt::format(
          "{} shared {}[{}] while thread {}'s cp.async to it is in flight: a cp.async.wait_group "
          "(then a __syncthreads() for other threads) is missing before the access",
          verb, name_, index, copier));
    return nullptr;
  }
  if (!check_async_reader(shadow_[at], index, access)) return nullptr;
  if (access != Access::atomic && shadow_[at].mbarrier) {
    report_violation(fmt::format(
        "{} shared {}[{}], a live mbarrier, with a plain access: use the mbarrier operations, "
        "or mbarrier.inval it before reusing its memory",
        access == Access::read ? "reads" : "writes", name_, index));
    return nullptr;
  }
  if (access != Access::atomic && !check_race(shadow_[at], index, access)) return nullptr;
  return data_.data() + at * element_bytes_;
}

bool SharedRegion::begin_async_write(long long first, long long count,
                                     AsyncWriter writer) noexcept {
  if (!check_bounds(first, count)) return false;
  const auto me = static_cast<std::int32_t>(block_.running_thread());
  const char* what = writer == AsyncWriter::tma ? "a TMA load" : "a cp.async";
  for (long long i = first; i < first + count; ++i) {
    Shadow& s = shadow_[static_cast<std::size_t>(i)];
    if (s.in_flight_by >= 0) {
      report_violation(fmt::format(
          "issues {} to shared {}[{}] while thread {}'s earlier {} to it is in flight", what,
          name_, i, s.in_flight_by,
          s.in_flight_kind == AsyncWriter::tma ? "TMA load" : "cp.async"));
      return false;
    }
    if (s.mbarrier) {
      report_violation(fmt::format("issues {} to shared {}[{}], a live mbarrier", what, name_, i));
      return false;
    }
    if (!check_async_reader(s, i, Access::write) || !check_race(s, i, Access::write))
      return false;
  }
  for (long long i = first; i < first + count; ++i) {
    Shadow& s = shadow_[static_cast<std::size_t>(i)];
    s.in_flight_by = me;
    s.in_flight_kind = writer;
  }
  return true;
}

void SharedRegion::land_bulk_write(long long first, long long count, const std::byte* data,
                                   std::int32_t agent, std::uint32_t agent_epoch) noexcept {
  std::memcpy(data_.data() + static_cast<std::size_t>(first) * element_bytes_, data,
              static_cast<std::size_t>(count) * element_bytes_);
  for (long long i = first; i < first + count; ++i) {
    Shadow& s = shadow_[static_cast<std::size_t>(i)];
    s.in_flight_by = -1;
    s.write_interval = block_.interval(rank_), s.writer = agent, s.writer_epoch = agent_epoch;
    s.writer_fences = 0;
  }
}

bool SharedRegion::begin_async_read(long long first, long long count, AsyncReader reader,
                                    std::span<const std::uint8_t> used) noexcept {
  if (!check_bounds(first, count)) return false;
  for (long long i = first; i < first + count; ++i) {
    if (!used.empty() && !used[static_cast<std::size_t>(i - first)]) continue;
    Shadow& s = shadow_[static_cast<std::size_t>(i)];
    if (element(i, Access::read) == nullptr || !check_proxy_fence(s, i)) return false;
  }
  const auto me = static_cast<std::int32_t>(block_.running_thread());
  for (long long i = first; i < first + count; ++i) {
    Shadow& s = shadow_[static_cast<std::size_t>(i)];
    s.async_reader = me, s.async_reader_kind = reader;
    ++s.async_reads;
  }
  return true;
}

void SharedRegion::end_async_read(long long first, long long count) noexcept {
  for (long long i = first; i < first + count; ++i) {
    Shadow& s = shadow_[static_cast<std::size_t>(i)];
    if (s.async_reads > 0 && --s.async_reads == 0) s.async_reader = -1;
  }
}

// Writing an async read's source before the wait that ends the read is a
// race with the copy engine or the tensor cores.
bool SharedRegion::check_async_reader(const Shadow& s, long long index, Access access) noexcept {
  if (access == Access::read || s.async_reads == 0) return true;
  const bool store = s.async_reader_kind == AsyncReader::tma_store;
  report_violation(fmt::format(
      "writes shared {}[{}] while thread {}'s {} still reads it: a {} in that thread (then a "
      "__syncthreads()) is missing first",
      name_, index, s.async_reader, store ? "TMA store" : "wgmma",
      store ? "cp.async.bulk.wait_group.read" : "wgmma.wait_group covering it"));
  return false;
}

// The async proxy (TMA, wgmma) sees a thread's ordinary shared stores only
// after that thread's fence.proxy.async.
bool SharedRegion::check_proxy_fence(const Shadow& s, long long index) noexcept {
  if (s.writer < 0 || static_cast<unsigned>(s.writer) >= block_.threads() ||
      block_.proxy_fences(s.writer) != s.writer_fences)
    return true;
  report_violation(fmt::format(
      "the async proxy reads shared {}[{}], which thread {} wrote with an ordinary store and no "
      "fence.proxy.async.shared::cta after it: add the fence in the writing thread before the "
      "barrier",
      name_, index, s.writer));
  return false;
}

void SharedRegion::land_async_write(long long first, long long count,
                                    const std::byte* data) noexcept {
  for (long long i = first; i < first + count; ++i) {
    const auto at = static_cast<std::size_t>(i);
    shadow_[at].in_flight_by = -1;
    if (check_race(shadow_[at], i, Access::write))
      std::memcpy(data_.data() + at * element_bytes_, data + (i - first) * element_bytes_,
                  element_bytes_);
  }
}

bool SharedRegion::check_race(Shadow& s, long long index, Access access) noexcept {
  const auto me = static_cast<std::int32_t>(block_.running_thread());
  const std::uint32_t now = block_.interval(rank_);
  const auto race = [&](const char* what, std::int32_t other) {
    const std::string who =
        other == kManyReaders ? std::string("several threads") : block_.who(other);
    // In a cluster, whose block's copy of the array.
    const std::string block = block_.cluster_blocks() == 1
                                  ? std::string()
                                  : fmt::format(" of block {}", block_.cluster_block(rank_));
    report_violation(fmt::format(
        "{} shared {}[{}]{} {} {} in the same barrier interval ({}): a race; a "
        "__syncthreads(){} is missing between them",
        access == Access::read ? "reads" : "writes", name_, index, block, what, who, now,
        block_.orders_by_mbarriers() ? " (or an mbarrier phase that orders them)" : ""));
  };
  const bool unordered_write =
      s.write_interval == now && s.writer != me && !block_.ordered_after(s.writer, s.writer_epoch);
  if (access == Access::read) {
    if (unordered_write) race("after a write by", s.writer);
    record_read(s, me, now);
    if (s.write_interval != 0) return true;
    // Judged when the interval ends: a later write by another thread in it
    // is a race (reported then), no write at all an uninitialised read.
    if (s.unwritten_read_interval == 0) s.unwritten_read_interval = now, s.unwritten_reader = me;
    return false;
  }
  if (unordered_write) race("that was written by", s.writer);
  if (s.read_interval == now && !reads_ordered(s, me)) race("that was read by", s.reader);
  s.write_interval = now, s.writer = me, s.writer_epoch = block_.epoch();
  s.writer_fences = block_.proxy_fences(me);
  return true;
}

void SharedRegion::record_read(Shadow& s, std::int32_t me, std::uint32_t now) {
  const std::uint32_t epoch = block_.epoch();
  if (s.read_interval != now) {
    s.read_interval = now, s.reader = me, s.reader_epoch = epoch, s.readers = -1;
    return;
  }
  if (s.reader == me) {
    s.reader_epoch = epoch;
    return;
  }
  if (s.reader != kManyReaders) {
    if (block_.orders_by_mbarriers()) {
      s.readers = static_cast<std::int32_t>(reader_lists_.size());
      reader_lists_.push_back({{s.reader, s.reader_epoch}});
    }
    s.reader = kManyReaders;
  }
  if (s.readers < 0) return;
  auto& list = reader_lists_[static_cast<std::size_t>(s.readers)];
  for (auto& [reader, at] : list)
    if (reader == me) {
      at = epoch;
      return;
    }
  list.emplace_back(me, epoch);
}

bool SharedRegion::reads_ordered(const Shadow& s, std::int32_t me) const {
  if (s.reader == me) return true;
  if (s.reader != kManyReaders) return block_.ordered_after(s.reader, s.reader_epoch);
  if (s.readers < 0) return false;  // several readers, their epochs not kept
  for (const auto& [reader, at] : reader_lists_[static_cast<std::size_t>(s.readers)])
    if (reader != me && !block_.ordered_after(reader, at)) return false;
  return true;
}

void SharedRegion::report_unwritten_reads() {
  for (std::size_t i = 0; i < shadow_.size(); ++i) {
    Shadow& s = shadow_[i];
    if (s.unwritten_read_interval == 0) continue;
    if (s.write_interval == 0 || s.writer == s.unwritten_reader)
      report_violation(fmt::format(
          "thread {} reads shared {}[{}] before any thread of the block wrote it (barrier "
          "interval {})",
          s.unwritten_reader, name_, i, s.unwritten_read_interval));
    s.unwritten_read_interval = 0;
  }
}

// ---- threads and barriers -------------------------------------------------

BlockScheduler& BlockScheduler::for_this_thread() {
  thread_local BlockScheduler scheduler;
  return scheduler;
}

BlockScheduler& BlockScheduler::current() { return *running_scheduler; }

void BlockScheduler::Cta::reset() {
  for (auto& region : shared) region->reset();
  remote.clear();
  returned = 0;
  static_shared_bytes = dynamic_shared_bytes = 0;
  next_shared_address = 0;
  interval = 1;
}

void BlockScheduler::run_cluster(unsigned first_block, unsigned cluster, unsigned blocks,
                                 unsigned threads, Body body, const void* context) {
  first_block_ = first_block, cluster_ = cluster, block_threads_ = threads;
  emulated::blockDim = {threads, 1, 1};
  emulated::gridDim = {blocks, 1, 1};
  running_scheduler = this;
  if (ctas_.size() < cluster) ctas_.resize(cluster);
  for (unsigned r = 0; r < cluster; ++r) ctas_[r].reset();
  mbarriers_.reset();
  mbarriers_used_ = false;
  cluster_barriers_ = 0;
  inits_.clear();
  bulk_loads_.clear();
  warpgroups_.reset(threads * cluster);
  agents_.clear();
  agent_epochs_.clear();
  start_threads(threads * cluster, body, context);
  while (step()) {
  }
  warpgroups_.report_mismatches();
  if (!bulk_loads_.empty()) {
    enter(bulk_loads_.front().issuer);
    report_violation(fmt::format(
        "the block ends with {} TMA load{} in flight, never waited for on {}: wait for the "
        "phase it completes before the block returns",
        bulk_loads_.size(), bulk_loads_.size() == 1 ? "" : "s",
        mbarriers_.describe(bulk_loads_.front().bar)));
    bulk_loads_.clear();
  }
  for (unsigned r = 0; r < cluster; ++r) end_interval(r);
  running_scheduler = nullptr;
}

// Runs every thread that can run, then lets the waits that can end, end:
// as late as the GPU may end them, so that a TMA load lands only once
// every thread waits.  What can never end is reported and broken last.
// False once every thread has returned.
bool BlockScheduler::step() {
  for (unsigned t = 0; t < threads_.size(); ++t)
    if (runnable(t)) resume(t);
  if (settle_warps(false) || wake_mbarrier_waits() || open_barriers() || open_cluster_barrier())
    return true;
  if (any_mbarrier_wait() && land_bulk_loads()) return true;
  return settle_warps(true) || report_deadlock() || release_divergent_barriers();
}

void BlockScheduler::start_threads(unsigned threads, Body body, const void* context) {
  threads_.clear();
  threads_.resize(threads);  // never resized while fibers refer to it
  warps_ = (threads + kWarpSize - 1) / kWarpSize;
  for (unsigned t = 0; t < threads; ++t)
    threads_[t].fiber = boost::context::fiber(
        std::allocator_arg, PooledStack{&stacks_, &threads_[t].stack},
        [this, t, body, context](boost::context::fiber&& scheduler) {
          complete_stack_switch(nullptr, &host_stack_);
          threads_[t].scheduler = std::move(scheduler);
          body(context);
          report_unfinished_copies(threads_[t]);
          threads_[t].done = true;
          ++ctas_[t / block_threads_].returned;
          if (cluster_ > 1) retire_remote_accesses(t);
          announce_stack_switch(nullptr, host_stack_);  // this stack never runs again
          return std::move(threads_[t].scheduler);
        });
}

void BlockScheduler::report_unfinished_copies(ThreadSlot& t) {
  if (const std::size_t n = t.copies.in_flight(); n > 0)
    report_violation(fmt::format(
        "returns with {} cp.async cop{} never waited for: a cp.async.wait_group is missing", n,
        n == 1 ? "y" : "ies"));
  if (const std::size_t n = t.stores.reading.size(); n > 0) {
    report_violation(fmt::format(
        "returns with {} TMA store{} still reading shared memory: a "
        "cp.async.bulk.commit_group and cp.async.bulk.wait_group.read are missing",
        n, n == 1 ? "" : "s"));
    for (const BulkStoreGroups::Source& s : t.stores.reading)
      s.region->end_async_read(s.first, s.count);
    t.stores = {};
  }
  if (const std::size_t n = t.wgmma.in_flight(); n > 0)
    report_violation(fmt::format(
        "returns with {} wgmma{} never waited for: a wgmma.commit_group and wgmma.wait_group are "
        "missing",
        n, n == 1 ? "" : "s"));
  t.wgmma.clear();
}

bool BlockScheduler::runnable(unsigned thread) const {
  const ThreadSlot& t = threads_[thread];
  return !t.done && !t.waiting && !t.cluster_waiting && t.arrival == nullptr && !t.mbarrier_wait;
}

bool BlockScheduler::rank_returned(unsigned rank) const {
  return ctas_[rank].returned == block_threads_;
}

void BlockScheduler::enter(unsigned thread) {
  running_ = thread;
  running_rank_ = cluster_ == 1 ? 0 : thread / block_threads_;
  emulated::threadIdx = {thread - running_rank_ * block_threads_, 0, 0};
  emulated::blockIdx = {first_block_ + running_rank_, 0, 0};
}

void BlockScheduler::resume(unsigned thread) {
  enter(thread);
  ThreadSlot& slot = threads_[thread];
  announce_stack_switch(&host_fake_stack_,
                        {static_cast<char*>(slot.stack.sp) - slot.stack.size, slot.stack.size});
  slot.fiber = std::move(slot.fiber).resume();
  complete_stack_switch(host_fake_stack_);
}

// Opens each block's __syncthreads() that all its threads wait at.
bool BlockScheduler::open_barriers() {
  bool opened = false;
  for (unsigned r = 0; r < cluster_; ++r) opened |= open_barrier(r);
  return opened;
}

// Block `rank`'s barrier, once every thread of the block has returned or
// waits at it and one waits; reports a barrier that not every thread
// reached.
bool BlockScheduler::open_barrier(unsigned rank) {
  unsigned waiting = 0, finished = 0;
  int line = 0;
  bool same_line = true;
  const unsigned first = rank * block_threads_, last = first + block_threads_;
  for (unsigned i = first; i < last; ++i) {
    const ThreadSlot& t = threads_[i];
    if (t.done) ++finished;
    if (!t.done && !t.waiting) return false;
    if (!t.waiting) continue;
    if (waiting++ == 0) line = t.barrier_line;
    same_line = same_line && t.barrier_line == line;
  }
  if (waiting == 0) return false;
  if (finished > 0 || !same_line) {
    enter(first);
    report_violation(fmt::format(
        "__syncthreads() divergence in barrier interval {}: {} of {} threads wait at line {}{}, "
        "{} have returned; every thread of a block must reach the same barrier",
        ctas_[rank].interval, waiting, block_threads_, line, same_line ? "" : " and other lines",
        finished));
  }
  for (unsigned i = first; i < last; ++i) threads_[i].waiting = false;
  end_interval(rank);
  return true;
}

// barrier.cluster, once every thread of the cluster has returned or waits
// at it and one waits: every block's barrier interval ends, which orders
// the accesses before it (in any block) before those after.
bool BlockScheduler::open_cluster_barrier() {
  unsigned waiting = 0, finished = 0;
  for (const ThreadSlot& t : threads_) {
    if (!t.done && !t.cluster_waiting) return false;
    finished += t.done ? 1u : 0u;
    waiting += t.cluster_waiting ? 1u : 0u;
  }
  if (waiting == 0) return false;
  if (finished > 0) {
    enter(0);
    report_violation(fmt::format(
        "barrier.cluster divergence: {} of the cluster's {} threads wait at it, {} have "
        "returned; every thread of every block of the cluster must reach it",
        waiting, threads_.size(), finished));
  }
  for (ThreadSlot& t : threads_) t.cluster_waiting = false;
  for (unsigned r = 0; r < cluster_; ++r) {
    end_interval(r);
    ctas_[r].remote.clear();  // ordered before everything after the barrier
  }
  ++cluster_barriers_;
  return true;
}

// Nothing else can run: threads that wait at __syncthreads() or
// barrier.cluster while others of theirs wait elsewhere never meet.
// Reported, and released.
bool BlockScheduler::release_divergent_barriers() {
  unsigned at_block = 0, at_cluster = 0, first = 0;
  for (unsigned i = 0; i < threads_.size(); ++i) {
    ThreadSlot& t = threads_[i];
    if (!t.waiting && !t.cluster_waiting) continue;
    if (at_block + at_cluster == 0) first = i;
    at_block += t.waiting ? 1u : 0u;
    at_cluster += t.cluster_waiting ? 1u : 0u;
    t.waiting = t.cluster_waiting = false;
  }
  if (at_block + at_cluster == 0) return false;
  enter(first);
  report_violation(fmt::format(
      "barrier divergence: {} threads wait at __syncthreads() and {} at barrier.cluster, and "
      "neither barrier can open: every thread of a block must reach the same barrier",
      at_block, at_cluster));
  for (unsigned r = 0; r < cluster_; ++r) end_interval(r);
  return true;
}

void BlockScheduler::end_interval(unsigned rank) {
  for (auto& region : ctas_[rank].shared) region->report_unwritten_reads();
  if (recorder_ != nullptr) recorder_->end_interval();
  ++ctas_[rank].interval;
}

void BlockScheduler::barrier(int line) {
  ThreadSlot& self = threads_[running_];
  self.waiting = true;
  self.barrier_line = line;
  yield(self);
}

void BlockScheduler::cluster_barrier() {
  ThreadSlot& self = threads_[running_];
  self.cluster_waiting = true;
  yield(self);
}

// Back to run_cluster() until the scheduler resumes this thread.
void BlockScheduler::yield(ThreadSlot& self) {
  announce_stack_switch(&self.fake_stack, host_stack_);
  self.scheduler = std::move(self.scheduler).resume();
  complete_stack_switch(self.fake_stack, &host_stack_);
}

// The id of the array declared at (name, line): the one another block of
// the cluster gave it, so that the memory counters see one site for all
// the cluster's copies of it, whichever arrays each block declared first
// (in earlier launches too: the blocks keep theirs); else the next unused.
std::uint32_t BlockScheduler::shared_region_id(const char* name, int line) const {
  std::uint32_t next = 0;
  for (const Cta& cta : ctas_)
    for (const auto& region : cta.shared) {
      if (region->declared_at(name, line)) return region->id();
      next = std::max(next, region->id() + 1);
    }
  return next;
}

SharedRegion& BlockScheduler::shared_region(const char* name, int line, long long count,
                                            std::size_t element_bytes, std::size_t alignment,
                                            bool dynamic) {
  Cta& cta = ctas_[running_rank_];
  SharedRegion* found = nullptr;
  for (auto& region : cta.shared)
    if (region->declared_at(name, line)) {
      if (!region->fits(count, element_bytes, alignment, dynamic))
        region = std::make_unique<SharedRegion>(*this, region->id(), name, line, count,
                                                element_bytes, alignment, dynamic, running_rank_);
      found = region.get();
      break;
    }
  if (found == nullptr) {
    cta.shared.push_back(std::make_unique<SharedRegion>(*this, shared_region_id(name, line), name,
                                                        line, count, element_bytes, alignment,
                                                        dynamic, running_rank_));
    found = cta.shared.back().get();
  }
  if (found->declare()) {
    count_shared_bytes(*found);
    const std::size_t a = found->alignment();
    cta.next_shared_address = static_cast<std::uint32_t>((cta.next_shared_address + a - 1) / a * a);
    found->set_base(cta.next_shared_address);
    cta.next_shared_address += static_cast<std::uint32_t>(found->bytes());
  }
  return *found;
}

SharedRegion* BlockScheduler::region_at(std::uint32_t address) const {
  for (const auto& region : ctas_[running_rank_].shared)
    if (region->declared() && address >= region->base() &&
        address - region->base() < region->bytes())
      return region.get();
  return nullptr;
}

// Static arrays are laid out one after another, each at its alignment; the
// dynamic array follows them.  ptxas refuses more than 48 KiB of static
// arrays, and a launch more than the opt-in limit in all.
void BlockScheduler::count_shared_bytes(const SharedRegion& region) {
  const auto bytes = static_cast<std::size_t>(region.count()) * region.element_bytes();
  Cta& cta = ctas_[running_rank_];
  if (region.dynamic()) {
    cta.dynamic_shared_bytes = bytes;
  } else {
    const std::size_t start = (cta.static_shared_bytes + region.alignment() - 1) /
                              region.alignment() * region.alignment();
    const bool was_within = cta.static_shared_bytes <= kStaticSharedLimit;
    cta.static_shared_bytes = start + bytes;
    if (was_within && cta.static_shared_bytes > kStaticSharedLimit)
      report_violation(fmt::format(
          "declares static shared arrays of {} bytes with {}, beyond the {} that ptxas allows: "
          "put the large ones in CONVJIT_DYNAMIC_SHARED_ARRAY",
          cta.static_shared_bytes, region.name(), kStaticSharedLimit));
  }
  if (cta.static_shared_bytes + cta.dynamic_shared_bytes > kOptInSharedLimit &&
      cta.static_shared_bytes + cta.dynamic_shared_bytes - bytes <= kOptInSharedLimit)
    report_violation(fmt::format(
        "uses {} bytes of shared memory ({} static, {} dynamic), beyond the {} an sm_90 block "
        "may have",
        cta.static_shared_bytes + cta.dynamic_shared_bytes, cta.static_shared_bytes,
        cta.dynamic_shared_bytes, kOptInSharedLimit));
}

// ---- warp collectives --------------------------------------------------------

void BlockScheduler::arrive(WarpArrival& arrival) {
  const unsigned lane = running_ % kWarpSize, first = running_ - lane;
  const unsigned in_block =
      threads_.size() - first >= kWarpSize ? kFullWarp : (1u << (threads_.size() - first)) - 1;
  if ((arrival.mask & (1u << lane)) == 0 || (arrival.mask & ~in_block) != 0) {
    report_violation(fmt::format(
        "calls {} (line {}) with mask {:#010x}, which {}; the mask must name the calling lane "
        "and lanes of the block only",
        arrival.name, arrival.line, arrival.mask,
        (arrival.mask & (1u << lane)) == 0 ? fmt::format("leaves out its own lane {}", lane)
                                            : "names lanes past the block's last thread"));
    arrival.mask = (arrival.mask & in_block) | (1u << lane);
  }
  ThreadSlot& self = threads_[running_];
  self.arrival = &arrival;
  yield(self);
}

unsigned BlockScheduler::live_lanes(unsigned warp) const {
  unsigned mask = 0;
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    const std::size_t t = std::size_t{warp} * kWarpSize + lane;
    if (t < threads_.size() && !threads_[t].done) mask |= 1u << lane;
  }
  return mask;
}

// Completes every collective whose lanes have all arrived; with
// `release_stuck` (when nothing else can run), reports and releases the
// others too.  True when a thread can run again.
bool BlockScheduler::settle_warps(bool release_stuck) {
  bool progressed = false;
  for (unsigned w = 0; w < warps_; ++w) progressed |= settle_warp(w, release_stuck);
  return progressed;
}

bool BlockScheduler::settle_warp(unsigned warp, bool release_stuck) {
  const unsigned first = warp * kWarpSize;
  bool settled = false;
  for (unsigned lane = 0; lane < kWarpSize && first + lane < threads_.size(); ++lane) {
    const WarpArrival* leader = threads_[first + lane].arrival;
    if (leader == nullptr) continue;
    bool all_there = true;
    for (unsigned other = 0; other < kWarpSize; ++other) {
      if ((leader->mask >> other & 1u) == 0) continue;
      const WarpArrival* a = threads_[first + other].arrival;
      all_there = all_there && a != nullptr && a->same_collective(*leader);
    }
    if (!all_there && !release_stuck) continue;
    if (!all_there) report_stuck(first + lane, *leader);
    complete(*leader, first);
    settled = true;
  }
  return settled;
}

void BlockScheduler::report_stuck(unsigned thread, const WarpArrival& arrival) {
  const unsigned first = thread - thread % kWarpSize;
  std::string others;
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    if ((arrival.mask >> lane & 1u) == 0) continue;
    const ThreadSlot& t = threads_[first + lane];
    std::string where;
    if (t.done)
      where = "has returned";
    else if (t.arrival == nullptr && !t.waiting)
      where = "has not arrived";
    else if (t.waiting)
      where = fmt::format("waits at __syncthreads() (line {})", t.barrier_line);
    else if (!t.arrival->same_collective(arrival))
      where = fmt::format("waits at {} (line {}, mask {:#010x})", t.arrival->name,
                          t.arrival->line, t.arrival->mask);
    if (!where.empty()) others += fmt::format("{}lane {} {}", others.empty() ? "" : ", ", lane,
                                              where);
  }
  enter(thread);
  report_violation(fmt::format(
      "warp divergence: {} (line {}, mask {:#010x}) waits for lanes that never arrive: {}; "
      "every lane the mask names must reach the same warp collective",
      arrival.name, arrival.line, arrival.mask, others));
}

// Completes the collective `leader` waits at with every lane waiting at
// the same one, and lets them run on.
void BlockScheduler::complete(const WarpArrival& leader, unsigned first_thread) {
  WarpLanes lanes;
  lanes.first_thread = first_thread;
  lanes.mask = leader.mask;
  const WarpArrival key = leader;  // the leader's arrival is cleared below
  for (unsigned lane = 0; lane < kWarpSize; ++lane) {
    if ((key.mask >> lane & 1u) == 0) continue;
    WarpArrival* a = threads_[first_thread + lane].arrival;
    if (a != nullptr && a->same_collective(key)) lanes.lane[lane] = a;
  }
  const unsigned saved = running_;
  key.complete(lanes);
  enter(saved);
  for (unsigned lane = 0; lane < kWarpSize; ++lane)
    if (lanes.lane[lane] != nullptr) threads_[first_thread + lane].arrival = nullptr;
}

// ---- mbarriers -------------------------------------------------------------

void BlockScheduler::mbarrier_init(const MbarrierKey& key, long long count) {
  mbarriers_used_ = true;
  if (!mbarriers_.init(key, count)) return;
  key.region->mark_mbarrier(key.index, true);
  if (cluster_ > 1) inits_[key] = cluster_barriers_;
}

void BlockScheduler::mbarrier_inval(const MbarrierKey& key) {
  for (const ThreadSlot& t : threads_)
    if (t.mbarrier_wait && t.mbarrier_wait->first == key) {
      report_violation(fmt::format("mbarrier.inval of {} while threads still wait on it",
                                   mbarriers_.describe(key)));
      return;
    }
  for (const BulkLoad& load : bulk_loads_)
    if (load.bar == key) {
      report_violation(fmt::format("mbarrier.inval of {} while a TMA load completes on it",
                                   mbarriers_.describe(key)));
      return;
    }
  if (!mbarriers_.inval(key)) return;
  key.region->mark_mbarrier(key.index, false);
  inits_.erase(key);
}

// The arrival releases what this thread knows, its accesses so far
// included; its later accesses get a new epoch.
std::uint64_t BlockScheduler::mbarrier_arrive(const MbarrierKey& key, long long count) {
  ThreadSlot& self = threads_[running_];
  if (self.knows.size() < threads_.size()) self.knows.resize(threads_.size(), 0);
  self.knows[running_] = self.epoch;
  const std::uint64_t phase = mbarriers_.arrive(key, count, self.knows);
  ++self.epoch;
  return phase;
}

// True even after a report (a dead barrier, a broken deadlock): callers
// loop until it is, and the report already fails the run.
bool BlockScheduler::mbarrier_wait(const MbarrierKey& key, unsigned parity) {
  bool valid = false;
  if (!mbarriers_.phase_complete(key, parity, valid)) {
    if (!valid) return true;
    ThreadSlot& self = threads_[running_];
    self.mbarrier_wait.emplace(key, parity);
    yield(self);
    if (std::exchange(self.wait_broken, false)) return true;
  }
  join_clock(threads_[running_].knows, mbarriers_.released(key));
  return true;
}

bool BlockScheduler::ordered_after(std::int32_t other, std::uint32_t epoch) const {
  const OrderClock& knows = threads_[running_].knows;
  return other >= 0 && static_cast<std::size_t>(other) < knows.size() &&
         knows[static_cast<std::size_t>(other)] >= epoch;
}

// Wakes the threads whose phase completed.
bool BlockScheduler::wake_mbarrier_waits() {
  bool woke = false;
  for (ThreadSlot& t : threads_)
    if (t.mbarrier_wait &&
        mbarriers_.phase_complete(t.mbarrier_wait->first, t.mbarrier_wait->second)) {
      t.mbarrier_wait.reset();
      woke = true;
    }
  return woke;
}

bool BlockScheduler::any_mbarrier_wait() const {
  return std::any_of(threads_.begin(), threads_.end(),
                     [](const ThreadSlot& t) { return t.mbarrier_wait.has_value(); });
}

// ---- clusters --------------------------------------------------------------

SharedRegion* BlockScheduler::peer_region(const SharedRegion& region, unsigned rank) {
  if (rank >= cluster_) {
    report_violation(fmt::format(
        "maps shared {} to block {} of the cluster, which has {} block{}: mapa's rank must be "
        "below %cluster_nctarank",
        region.name(), rank, cluster_, cluster_ == 1 ? "" : "s"));
    return nullptr;
  }
  for (const auto& peer : ctas_[rank].shared)
    if (peer->declared() && peer->declared_at(region.name(), region.line())) return peer.get();
  report_violation(
      fmt::format("maps shared {} to block {} of the cluster before that block declared it: a "
                  "barrier.cluster between the declarations and the first remote access is missing",
                  region.name(), rank));
  return nullptr;
}

bool BlockScheduler::check_alive(unsigned rank, std::string_view access) {
  if (!rank_returned(rank)) return true;
  report_violation(fmt::format(
      "{} of block {} of the cluster, which has returned: a block must not return while others "
      "may still reach its shared memory (a barrier.cluster before it returns)",
      access, cluster_block(rank)));
  return false;
}

bool BlockScheduler::check_remote(const MbarrierKey& key, const char* operation) {
  const unsigned rank = key.region->rank();
  if (rank == running_rank_) return true;
  if (!check_alive(rank,
                   fmt::format("{} mbarrier {}[{}]", operation, key.region->name(), key.index)))
    return false;
  const auto init = inits_.find(key);
  if (init != inits_.end() && init->second == cluster_barriers_) {
    report_violation(fmt::format(
        "{} mbarrier {}[{}] of block {} of the cluster before a barrier.cluster made its init "
        "visible to the cluster: add fence.mbarrier_init and a barrier.cluster after the init",
        operation, key.region->name(), key.index, cluster_block(rank)));
    return false;
  }
  return true;
}

bool BlockScheduler::check_remote_read(const SharedRegion& region) {
  const unsigned rank = region.rank();
  if (rank == running_rank_) return true;
  if (!check_alive(rank, fmt::format("reads shared {}", region.name()))) return false;
  note_remote(rank, static_cast<std::int32_t>(running_), threads_[running_].epoch,
              fmt::format("read of shared {}", region.name()));
  return true;
}

std::uint64_t BlockScheduler::mbarrier_arrive_cluster(const MbarrierKey& key) {
  if (!check_remote(key, "arrives on")) return 0;
  const unsigned rank = key.region->rank();
  if (rank != running_rank_)
    note_remote(rank, static_cast<std::int32_t>(running_), threads_[running_].epoch,
                fmt::format("arrival on mbarrier {}[{}]", key.region->name(), key.index));
  return mbarrier_arrive(key, 1);
}

void BlockScheduler::note_remote(unsigned rank, std::int32_t thread, std::uint32_t epoch,
                                 std::string what) {
  ctas_[rank].remote.push_back({thread, epoch, std::move(what)});
}

// `thread` has returned: the remote accesses to its block that it knows
// of are ordered before the block returns; once the block's last thread
// has returned, those left are reported.
void BlockScheduler::retire_remote_accesses(unsigned thread) {
  const unsigned rank = thread / block_threads_;
  std::vector<RemoteAccess>& remote = ctas_[rank].remote;
  const OrderClock& knows = threads_[thread].knows;
  std::erase_if(remote, [&](const RemoteAccess& a) {
    const auto by = static_cast<std::size_t>(a.thread);
    return by < knows.size() && knows[by] >= a.epoch;
  });
  if (remote.empty() || !rank_returned(rank)) return;
  report_violation(fmt::format(
      "block {} of the cluster returns while {}'s {} is not ordered before it{}: a barrier.cluster "
      "before the block returns (or a wait that acquires it) is missing",
      cluster_block(rank), who(remote.front().thread), remote.front().what,
      remote.size() > 1 ? fmt::format(" (nor {} more remote accesses)", remote.size() - 1) : ""));
  remote.clear();
}

// ---- TMA -------------------------------------------------------------------

void BlockScheduler::issue_bulk_load(BulkLoad load) {
  load.issuer = running_;
  bulk_loads_.push_back(std::move(load));
}

// Lands every load in flight, in issue order, and completes its bytes on
// its mbarrier, releasing the writes to the phase's waiters.
bool BlockScheduler::land_bulk_loads() {
  if (bulk_loads_.empty()) return false;
  const unsigned saved = running_;
  std::vector<BulkLoad> landing = std::move(bulk_loads_);
  bulk_loads_.clear();
  for (const BulkLoad& load : landing) {
    enter(load.issuer);
    const std::int32_t agent = async_agent(load.bar);
    const std::uint32_t epoch = ++agent_epochs_[static_cast<std::size_t>(agent) - threads_.size()];
    load.region->land_bulk_write(load.first, load.count, load.data.data(), agent, epoch);
    if (load.region->rank() != running_rank_) {
      const std::string what =
          fmt::format("multicast TMA load into {}[{}]", load.region->name(), load.first);
      if (rank_returned(load.region->rank()))
        report_violation(fmt::format("a {} lands in block {} of the cluster, which has returned",
                                     what, cluster_block(load.region->rank())));
      note_remote(load.region->rank(), agent, epoch, what);
    }
    OrderClock released(static_cast<std::size_t>(agent) + 1, 0);
    released[static_cast<std::size_t>(agent)] = epoch;
    (void)mbarriers_.complete_tx(load.bar, static_cast<long long>(load.data.size()), &released);
  }
  enter(saved);
  return true;
}

std::int32_t BlockScheduler::async_agent(const MbarrierKey& key) {
  const auto it = std::find(agents_.begin(), agents_.end(), key);
  if (it == agents_.end()) {
    agents_.push_back(key);
    agent_epochs_.push_back(0);
    return static_cast<std::int32_t>(threads_.size() + agents_.size() - 1);
  }
  const auto agent = static_cast<std::size_t>(it - agents_.begin());
  return static_cast<std::int32_t>(threads_.size() + agent);
}

void BlockScheduler::wait_bulk_stores(unsigned newest) {
  BulkStoreGroups& groups = threads_[running_].stores;
  std::vector<BulkStoreGroups::Source> staying;
  for (const BulkStoreGroups::Source& s : groups.reading) {
    if (s.group + newest < groups.open_group)
      s.region->end_async_read(s.first, s.count);
    else
      staying.push_back(s);
  }
  groups.reading = std::move(staying);
}

std::uint32_t BlockScheduler::proxy_fences(std::int32_t thread) const {
  return thread >= 0 && static_cast<std::size_t>(thread) < threads_.size()
             ? threads_[static_cast<std::size_t>(thread)].proxy_fences
             : 0;
}

std::string BlockScheduler::who(std::int32_t thread) const {
  if (thread < 0 || (cluster_ == 1 && static_cast<std::size_t>(thread) < threads_.size()))
    return fmt::format("thread {}", thread);
  if (static_cast<std::size_t>(thread) < threads_.size()) {
    const auto t = static_cast<unsigned>(thread);
    return fmt::format("thread {} of block {}", t % block_threads_,
                       cluster_block(t / block_threads_));
  }
  const MbarrierKey& key = agents_[static_cast<std::size_t>(thread) - threads_.size()];
  return fmt::format(
      "a TMA load completing on mbarrier {}[{}]{}", key.region->name(), key.index,
      cluster_ == 1 ? "" : fmt::format(" of block {}", cluster_block(key.region->rank())));
}

// Threads wait on mbarriers that no thread can arrive at and no load
// complete: reported, and the waits broken.  False when none waits.
bool BlockScheduler::report_deadlock() {
  if (!any_mbarrier_wait()) return false;
  unsigned stuck = 0, done = 0, at_barrier = 0;
  std::string first;
  for (unsigned i = 0; i < threads_.size(); ++i) {
    ThreadSlot& t = threads_[i];
    done += t.done ? 1u : 0u;
    at_barrier += t.waiting ? 1u : 0u;
    if (!t.mbarrier_wait) continue;
    if (stuck++ == 0)
      first = fmt::format("thread {} waits for parity {} of mbarrier {}", i,
                          t.mbarrier_wait->second, mbarriers_.describe(t.mbarrier_wait->first));
    t.mbarrier_wait.reset();
    t.wait_broken = true;
  }
  enter(0);
  report_violation(fmt::format(
      "deadlock: {}{}; no thread can arrive or complete its transactions ({} of {} threads have "
      "returned, {} wait at __syncthreads())",
      first, stuck > 1 ? fmt::format(", and {} more threads wait likewise", stuck - 1) : "", done,
      threads_.size(), at_barrier));
  return true;
}

void block_barrier(int line) { BlockScheduler::current().barrier(line); }

void warp_collective(WarpArrival& arrival) { BlockScheduler::current().arrive(arrival); }

void enter_thread(unsigned thread) { BlockScheduler::current().enter(thread); }

unsigned running_thread_index() { return BlockScheduler::current().running_thread(); }

unsigned running_lane() { return running_thread_index() % kWarpSize; }

unsigned live_lanes_of_running_warp() {
  return BlockScheduler::current().live_lanes(running_thread_index() / kWarpSize);
}

}  // namespace convjit::emulator
