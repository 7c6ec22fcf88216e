// Global memory as an emulated kernel sees it: the launch's operands and
// workspace, copied into allocations with red zones so that an overrun of
// one tensor never lands in another.  Every access is checked against the
// tensor's strided view before it happens, so a wild index is reported
// (with the buffer and the element) instead of crashing or corrupting.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace convjit::emulator {

enum class Access : std::uint8_t { read, write, atomic };

enum class BufferRole : std::uint8_t {
  input,   // read-only
  output,  // every element must be written by the launch
  scratch  // workspace: an element must be written before it is read.  It is
           // untyped, as on the GPU: element_bytes is its smallest unit,
           // and an access may cover several whole, aligned units (a
           // 16-bit kernel reads f32 partial sums and 16-bit packed weights).
};

struct BufferSpec {
  std::string name;  // "x", "dy", "dw", "workspace", ...
  BufferRole role = BufferRole::input;
  std::size_t element_bytes = 4;
  std::int64_t span = 0;  // elements from the first to the last, inclusive
  // span flags, 1 where the view has an element; empty when all are.
  std::vector<std::uint8_t> is_element;
};

// Where an address lies, for the memory counters (access_recorder.hpp).
struct BufferLocation {
  std::uint32_t buffer = 0;  // in the order add() made them
  std::string_view name;
  // From the 256-byte boundary the buffer starts at or after, as on the
  // GPU, so that 32-byte sectors fall where the GPU's do.
  std::int64_t offset = 0;
  std::int64_t bytes = 0;  // the buffer's elements, from that boundary
};

class EmulatedBuffers {
 public:
  EmulatedBuffers();
  ~EmulatedBuffers();
  EmulatedBuffers(const EmulatedBuffers&) = delete;
  EmulatedBuffers& operator=(const EmulatedBuffers&) = delete;

  // Adds a buffer holding a copy of `initial` (span * element_bytes bytes),
  // or poison (all bits set: NaN in every float format) when null.
  // Returns the address the kernel is given.
  void* add(const BufferSpec& spec, const void* initial);

  // Checks one access of the running emulated thread; reports and returns
  // false when it must not happen (the caller then reads poison or drops
  // the write).
  bool check(const void* address, std::size_t bytes, Access access) noexcept;

  // The same for an access of `bytes` bytes of whole elements at once (a
  // vector access, a cp.async source): the address must be aligned to
  // `alignment`, as the GPU requires.
  bool check_vector(const void* address, std::size_t bytes, std::size_t alignment,
                    Access access) noexcept;

  // The buffer holding `address` (its elements, not its red zones).
  [[nodiscard]] std::optional<BufferLocation> locate(const void* address) const;

  // The running block's arrival on a counter in global memory
  // (common/arrival_counter.cuh), counted by `count`: after it, the block
  // reads what the blocks that arrived there before it wrote, and those
  // arriving after read its writes.  The emulator takes the kernel's
  // fences on trust; it checks that each such read follows an arrival.
  float arrive(const void* counter, const std::function<float()>& count);

  // Sets `bytes` at `address` (in one buffer) to zero, written before the
  // launch; whether they are all zero.
  void zero(void* address, std::size_t bytes);
  [[nodiscard]] bool is_zero(const void* address, std::size_t bytes) const;

  // Forgets which thread wrote what: kernels of one launch are ordered.
  void begin_kernel();
  // Reports output elements no kernel of the launch wrote.
  void report_unwritten_outputs() const;
  // Copies a buffer's span back to `destination`.
  void copy_out(std::string_view name, void* destination) const;

 private:
  struct Buffer;
  // The buffer whose allocation (red zones included) holds `p`, or null
  // after reporting the access as outside every buffer.
  Buffer* find(const void* p, std::size_t bytes, Access access) noexcept;
  bool check_element(Buffer& b, std::int64_t index, Access access) noexcept;
  // Whether block `reader` arrived on a counter after block `writer`.
  [[nodiscard]] bool ordered_after(long long reader, long long writer) noexcept;

  std::vector<std::unique_ptr<Buffer>> buffers_;
  // The current kernel's arrivals: each counter's blocks, and the blocks
  // each block arrived after (blocks run on several host threads).
  std::mutex arrivals_mutex_;
  std::map<const void*, std::vector<long long>> arrived_;
  std::map<long long, std::set<long long>> arrived_after_;
};

}  // namespace convjit::emulator
