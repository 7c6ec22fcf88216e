#include "dispatcher/kernel_workspace.hpp"

#include <cuda.h>
#include <fmt/format.h>

#include <utility>

namespace convjit {

namespace {

bool is_per_thread(const void* stream) {
  return stream == static_cast<const void*>(CU_STREAM_PER_THREAD);
}

// A stream's key: its handle, or for CU_STREAM_PER_THREAD this thread's
// number, odd so that it meets no handle (handles are aligned pointers,
// and the two odd special handles, CU_STREAM_LEGACY (1) and
// CU_STREAM_PER_THREAD (2), are below the first number, 3).  Unlike a
// thread_local's address, a number is never reused by a later thread.
std::uintptr_t stream_key(const void* stream) {
  if (!is_per_thread(stream)) return reinterpret_cast<std::uintptr_t>(stream);
  static std::atomic<std::uintptr_t> next_thread{1};
  static thread_local const std::uintptr_t this_thread =
      next_thread.fetch_add(1, std::memory_order_relaxed) * 2 + 1;
  return this_thread;
}

}  // namespace

Result<void*> caller_workspace(const ExecArgs& args, std::size_t needed, std::string_view user) {
  if (args.workspace == nullptr) return static_cast<void*>(nullptr);
  if (args.workspace_bytes < needed)
    return Status::invalid(fmt::format(
        "the workspace of {} bytes is smaller than the {} bytes {} needs; pass a larger one or "
        "none",
        args.workspace_bytes, needed, user));
  return args.workspace;
}

StreamWorkspaces::StreamWorkspaces(std::size_t bytes, Allocate allocate, Release release)
    : bytes_(bytes), allocate_(std::move(allocate)), release_(std::move(release)) {}

StreamWorkspaces::~StreamWorkspaces() {
  for (std::size_t i = 0; i < owned_count(); ++i) release_(slots_[i].memory);
  if (reserved_ != nullptr) release_(reserved_);
}

Status StreamWorkspaces::reserve() {
  if (bytes_ == 0) return Status::ok();
  std::lock_guard lock(grow_mutex_);
  if (reserved_ != nullptr || published_.load(std::memory_order_relaxed) > 0) return Status::ok();
  auto memory = allocate_(bytes_);
  if (!memory.is_ok()) return memory.status();
  reserved_ = memory.value();
  return Status::ok();
}

Result<void*> StreamWorkspaces::for_call(const ExecArgs& args, std::string_view user,
                                         const void* filters) {
  if (bytes_ == 0) return static_cast<void*>(nullptr);
  auto given = caller_workspace(args, bytes_, user);
  if (!given.is_ok() || given.value() != nullptr) return given;
  const std::uintptr_t stream = stream_key(args.stream);
  if (const Slot* slot = find(stream, filters, owned_count())) return slot->memory;
  return own_buffer(stream, filters, is_per_thread(args.stream), user);
}

const StreamWorkspaces::Slot* StreamWorkspaces::find(std::uintptr_t stream, const void* filters,
                                                     std::size_t count) const {
  for (std::size_t i = 0; i < count; ++i)
    if (slots_[i].stream == stream && slots_[i].filters == filters) return &slots_[i];
  return nullptr;
}

Result<void*> StreamWorkspaces::own_buffer(std::uintptr_t stream, const void* filters,
                                           bool per_thread, std::string_view user) {
  std::unique_lock lock(grow_mutex_);
  const std::size_t count = published_.load(std::memory_order_relaxed);
  if (const Slot* slot = find(stream, filters, count)) return slot->memory;  // another thread won
  if (count == kMaxStreams && filters != nullptr) {
    lock.unlock();  // no slot for w's own buffer: the stream's, w copied every call
    if (const Slot* slot = find(stream, nullptr, owned_count())) return slot->memory;
    return own_buffer(stream, nullptr, per_thread, user);
  }
  if (count == kMaxStreams)
    return Status::not_available(fmt::format(
        "{} keeps a {}-byte workspace for each of at most {} streams, and this is stream {}{}; "
        "pass a workspace in convjit_exec_t",
        user, bytes_, kMaxStreams, count + 1,
        per_thread ? " (CU_STREAM_PER_THREAD counts once for every thread that ever used it)"
                   : ""));
  void* memory = std::exchange(reserved_, nullptr);
  if (memory == nullptr) {
    auto allocated = allocate_(bytes_);
    if (!allocated.is_ok()) return allocated.status();
    memory = allocated.value();
  }
  slots_[count] = {stream, filters, memory};
  published_.store(count + 1, std::memory_order_release);
  return memory;
}

}  // namespace convjit
