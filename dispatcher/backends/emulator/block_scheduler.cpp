#include "dispatcher/backends/emulator/block_scheduler.hpp"

#include <fmt/format.h>

#include <cstring>
#include <memory>

#include "dispatcher/backends/emulator/launch_context.hpp"

namespace convjit::emulator {

namespace {

thread_local BlockScheduler* running_scheduler = nullptr;

}  // namespace

// ---- shared memory ----------------------------------------------------------

SharedRegion::SharedRegion(BlockScheduler& block, const char* name, int line, long long count,
                           std::size_t element_bytes)
    : block_(block),
      name_(name),
      line_(line),
      count_(count),
      element_bytes_(element_bytes),
      data_(static_cast<std::size_t>(count) * element_bytes),
      shadow_(static_cast<std::size_t>(count)) {
  reset();
}

void SharedRegion::reset() {
  std::memset(data_.data(), 0xff, data_.size());  // NaN in every float format
  std::fill(shadow_.begin(), shadow_.end(), Shadow{});
}

void* SharedRegion::element(long long index, Access access) noexcept {
  if (index < 0 || index >= count_) {
    report_violation(
        fmt::format("indexes shared {}[{}] (declared line {}), outside its {} elements", name_,
                    index, line_, count_));
    return nullptr;
  }
  const auto at = static_cast<std::size_t>(index);
  if (access != Access::atomic && !check_race(shadow_[at], index, access)) return nullptr;
  return data_.data() + at * element_bytes_;
}

bool SharedRegion::check_race(Shadow& s, long long index, Access access) noexcept {
  const auto me = static_cast<std::int32_t>(block_.running_thread());
  const std::uint32_t now = block_.interval();
  const auto race = [&](const char* what, std::int32_t other) {
    const std::string who =
        other == kManyReaders ? std::string("several threads") : fmt::format("thread {}", other);
    report_violation(fmt::format(
        "{} shared {}[{}] {} {} in the same barrier interval ({}): a race; a __syncthreads() is "
        "missing between them",
        access == Access::read ? "reads" : "writes", name_, index, what, who, now));
  };
  if (access == Access::read) {
    if (s.write_interval == now && s.writer != me) race("after a write by", s.writer);
    if (s.read_interval != now)
      s.read_interval = now, s.reader = me;
    else if (s.reader != me)
      s.reader = kManyReaders;
    if (s.write_interval != 0) return true;
    // Judged when the interval ends: a later write by another thread in it
    // is a race (reported then), no write at all an uninitialised read.
    if (s.unwritten_read_interval == 0) s.unwritten_read_interval = now, s.unwritten_reader = me;
    return false;
  }
  if (s.write_interval == now && s.writer != me) race("that was written by", s.writer);
  if (s.read_interval == now && s.reader != me) race("that was read by", s.reader);
  s.write_interval = now, s.writer = me;
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

void BlockScheduler::run_block(unsigned block, unsigned blocks, unsigned threads, Body body,
                               const void* context) {
  emulated::blockIdx = {block, 0, 0};
  emulated::blockDim = {threads, 1, 1};
  emulated::gridDim = {blocks, 1, 1};
  running_scheduler = this;
  interval_ = 1;
  for (auto& region : shared_) region->reset();
  start_threads(threads, body, context);
  do {
    for (unsigned t = 0; t < threads; ++t)
      if (!threads_[t].done && !threads_[t].waiting) resume(t);
  } while (open_barrier());
  end_interval();
  running_scheduler = nullptr;
}

void BlockScheduler::start_threads(unsigned threads, Body body, const void* context) {
  threads_.clear();
  threads_.resize(threads);  // never resized while fibers refer to it
  for (unsigned t = 0; t < threads; ++t)
    threads_[t].fiber = boost::context::fiber(
        std::allocator_arg, PooledStack{&stacks_, &threads_[t].stack},
        [this, t, body, context](boost::context::fiber&& scheduler) {
          complete_stack_switch(nullptr, &host_stack_);
          threads_[t].scheduler = std::move(scheduler);
          body(context);
          threads_[t].done = true;
          announce_stack_switch(nullptr, host_stack_);  // this stack never runs again
          return std::move(threads_[t].scheduler);
        });
}

void BlockScheduler::resume(unsigned thread) {
  running_ = thread;
  emulated::threadIdx = {thread, 0, 0};
  ThreadSlot& slot = threads_[thread];
  announce_stack_switch(&host_fake_stack_,
                        {static_cast<char*>(slot.stack.sp) - slot.stack.size, slot.stack.size});
  slot.fiber = std::move(slot.fiber).resume();
  complete_stack_switch(host_fake_stack_);
}

// Every thread has finished or waits at a barrier.  Opens it and returns
// true if any waits; reports a barrier that not every thread reached.
bool BlockScheduler::open_barrier() {
  unsigned waiting = 0, finished = 0;
  int line = 0;
  bool same_line = true;
  for (const ThreadSlot& t : threads_) {
    if (t.done) ++finished;
    if (!t.waiting) continue;
    if (waiting++ == 0) line = t.barrier_line;
    same_line = same_line && t.barrier_line == line;
  }
  if (waiting == 0) return false;
  if (finished > 0 || !same_line) {
    running_ = 0;
    emulated::threadIdx = {0, 0, 0};
    report_violation(fmt::format(
        "__syncthreads() divergence in barrier interval {}: {} of {} threads wait at line {}{}, "
        "{} have returned; every thread of a block must reach the same barrier",
        interval_, waiting, threads_.size(), line, same_line ? "" : " and other lines", finished));
  }
  for (ThreadSlot& t : threads_) t.waiting = false;
  end_interval();
  return true;
}

void BlockScheduler::end_interval() {
  for (auto& region : shared_) region->report_unwritten_reads();
  ++interval_;
}

void BlockScheduler::barrier(int line) {
  ThreadSlot& self = threads_[running_];
  self.waiting = true;
  self.barrier_line = line;
  announce_stack_switch(&self.fake_stack, host_stack_);
  self.scheduler = std::move(self.scheduler).resume();
  complete_stack_switch(self.fake_stack, &host_stack_);
}

SharedRegion& BlockScheduler::shared_region(const char* name, int line, long long count,
                                            std::size_t element_bytes) {
  for (auto& region : shared_)
    if (region->declared_at(name, line)) {
      if (!region->fits(count, element_bytes))
        region = std::make_unique<SharedRegion>(*this, name, line, count, element_bytes);
      return *region;
    }
  shared_.push_back(std::make_unique<SharedRegion>(*this, name, line, count, element_bytes));
  return *shared_.back();
}

void block_barrier(int line) { BlockScheduler::current().barrier(line); }

}  // namespace convjit::emulator
