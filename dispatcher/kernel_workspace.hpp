// Scratch memory for kernels that need some: the caller's, when it passes
// one in convjit_exec_t, else memory the kernel owns.
//
// A kernel's own memory is kept per stream.  Calls on one stream run in
// order, so they can share a buffer; calls on different streams may
// overlap, so each stream gets its own.  The lookup is lock-free; only the
// first call on a new stream allocates, under the kernel's own mutex.
//
// CU_STREAM_PER_THREAD is a different stream on every thread, so it is
// keyed by a number each thread draws once and that no later thread gets
// again: a buffer is never handed to a new thread while an exited thread's
// last kernel may still be using it.  The price is that every thread that
// ever called with it holds one of the kMaxStreams slots for the kernel's
// life; past that the call fails and says to pass a workspace.
//
// A call that keeps a copy of its filters there between calls (a promise
// that w is unchanged, packed_filter_copies.hpp) names them, and gets a
// buffer of its own for each w on its stream: layers that share a
// descriptor (ResNet-50's repeated blocks) then keep their copies side by
// side.  Such buffers take slots as streams do; past the last slot a call
// shares its stream's buffer (and copies w every time) rather than fail.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string_view>

#include "dispatcher/exec_args.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

// The caller's workspace for a kernel that needs `needed` bytes: nullptr
// when it passed none, an error naming both sizes when it is too small.
[[nodiscard]] Result<void*> caller_workspace(const ExecArgs& args, std::size_t needed,
                                             std::string_view user);

class StreamWorkspaces {
 public:
  using Allocate = std::function<Result<void*>(std::size_t bytes)>;
  using Release = std::function<void(void* memory)>;

  // More streams than this on one descriptor, each without a workspace of
  // its own, is an error that tells the caller to pass one.
  static constexpr std::size_t kMaxStreams = 32;

  StreamWorkspaces(std::size_t bytes, Allocate allocate, Release release);
  ~StreamWorkspaces();
  StreamWorkspaces(const StreamWorkspaces&) = delete;
  StreamWorkspaces& operator=(const StreamWorkspaces&) = delete;

  [[nodiscard]] std::size_t bytes() const { return bytes_; }

  // Allocates now the buffer that the first stream to call will own, so
  // that running out of memory shows at build, where another algorithm or
  // backend can be tried, rather than at the first call.
  [[nodiscard]] Status reserve();

  // The memory this call uses (nullptr when the kernel needs none):
  // `filters`' own buffer on the call's stream where not null (above).
  [[nodiscard]] Result<void*> for_call(const ExecArgs& args, std::string_view user,
                                       const void* filters = nullptr);

  // How many streams have a buffer of their own (tests, diagnostics).
  [[nodiscard]] std::size_t owned_count() const {
    return published_.load(std::memory_order_acquire);
  }

 private:
  struct Slot {
    std::uintptr_t stream = 0;      // stream_key()
    const void* filters = nullptr;  // the w whose copy it keeps, or null: the stream's
    void* memory = nullptr;
  };
  [[nodiscard]] Result<void*> own_buffer(std::uintptr_t stream, const void* filters,
                                         bool per_thread, std::string_view user);
  [[nodiscard]] const Slot* find(std::uintptr_t stream, const void* filters,
                                 std::size_t count) const;

  std::size_t bytes_;
  Allocate allocate_;
  Release release_;
  std::array<Slot, kMaxStreams> slots_{};  // [0, published_) are filled and never change
  std::atomic<std::size_t> published_{0};
  std::mutex grow_mutex_;
  void* reserved_ = nullptr;  // under grow_mutex_
};

}  // namespace convjit
