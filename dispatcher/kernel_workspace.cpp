#include "kernel_workspace.hpp"

#include <cuda.h>
#include <fmt/format.h>

namespace convjit {

namespace {

// CU_STREAM_PER_THREAD names a different stream on every thread, so the
// handle alone does not say which calls are ordered: key it by thread.
const void* stream_identity(const void* stream) {
  static thread_local const char this_thread = 0;
  return stream == static_cast<const void*>(CU_STREAM_PER_THREAD) ? &this_thread : stream;
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
}

Result<void*> StreamWorkspaces::for_call(const ExecArgs& args, std::string_view user) {
  if (bytes_ == 0) return static_cast<void*>(nullptr);
  auto given = caller_workspace(args, bytes_, user);
  if (!given.is_ok() || given.value() != nullptr) return given;
  const void* stream = stream_identity(args.stream);
  if (const Slot* slot = find(stream, owned_count())) return slot->memory;
  return own_buffer(stream, user);
}

const StreamWorkspaces::Slot* StreamWorkspaces::find(const void* stream, std::size_t count) const {
  for (std::size_t i = 0; i < count; ++i)
    if (slots_[i].stream == stream) return &slots_[i];
  return nullptr;
}

Result<void*> StreamWorkspaces::own_buffer(const void* stream, std::string_view user) {
  std::lock_guard lock(grow_mutex_);
  const std::size_t count = published_.load(std::memory_order_relaxed);
  if (const Slot* slot = find(stream, count)) return slot->memory;  // another thread won
  if (count == kMaxStreams)
    return Status::not_available(
        fmt::format("{} keeps a {}-byte workspace for each of at most {} streams, and this is "
                    "stream {}; pass a workspace in convjit_exec_t",
                    user, bytes_, kMaxStreams, count + 1));
  auto memory = allocate_(bytes_);
  if (!memory.is_ok()) return memory.status();
  slots_[count] = {stream, memory.value()};
  published_.store(count + 1, std::memory_order_release);
  return memory.value();
}

}  // namespace convjit
