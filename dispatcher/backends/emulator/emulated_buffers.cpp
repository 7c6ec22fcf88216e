#include "dispatcher/backends/emulator/emulated_buffers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>

#include "dispatcher/backends/emulator/launch_context.hpp"
#include "dispatcher/backends/emulator/violation_log.hpp"

namespace convjit::emulator {

namespace {

constexpr std::uint8_t kElement = 1, kInitialised = 2, kWritten = 4;
constexpr std::int64_t kNoWriter = -1;

const char* verb(Access access) {
  switch (access) {
    case Access::read:
      return "reads";
    case Access::write:
      return "writes";
    case Access::atomic:
      return "updates atomically";
  }
  return "touches";
}

// Red zone on each side, in elements: wide enough that an overrun of a
// stride or two stays inside it, bounded for large tensors.
std::int64_t red_zone(std::int64_t span) { return std::clamp<std::int64_t>(span, 64, 1 << 20); }

}  // namespace

// Buffers start on 256-byte boundaries, as cudaMalloc's do, plus the
// caller's own pointer's offset from one (a view into a larger tensor),
// so that a vector access is misaligned in the emulator exactly when it
// would be on the GPU with the same pointers.
constexpr std::size_t kBufferAlignment = 256;

struct EmulatedBuffers::Buffer {
  BufferSpec spec;
  std::int64_t zone = 0;           // elements, a multiple of kBufferAlignment bytes
  std::vector<std::byte> storage;  // alignment slack + zone + span + zone elements
  std::byte* base = nullptr;       // the first red-zone byte, aligned
  std::size_t bytes = 0;           // zone + span + zone elements
  std::vector<std::uint8_t> flags;
  std::vector<std::int64_t> writer;  // per element, in the current kernel

  std::byte* data() { return base + zone * static_cast<std::int64_t>(spec.element_bytes); }
  [[nodiscard]] const std::byte* data() const {
    return base + zone * static_cast<std::int64_t>(spec.element_bytes);
  }
  [[nodiscard]] bool holds(const std::byte* p) const { return p >= base && p < base + bytes; }
};

EmulatedBuffers::EmulatedBuffers() = default;
EmulatedBuffers::~EmulatedBuffers() = default;

void* EmulatedBuffers::add(const BufferSpec& spec, const void* initial) {
  auto b = std::make_unique<Buffer>();
  b->spec = spec;
  const auto span = static_cast<std::size_t>(spec.span);
  const auto per_alignment = static_cast<std::int64_t>(kBufferAlignment / spec.element_bytes);
  b->zone = (red_zone(spec.span) + per_alignment - 1) / per_alignment * per_alignment;
  b->bytes = (span + 2 * static_cast<std::size_t>(b->zone)) * spec.element_bytes;
  const std::size_t misalignment =
      reinterpret_cast<std::uintptr_t>(initial) % kBufferAlignment / spec.element_bytes *
      spec.element_bytes;
  b->storage.assign(b->bytes + 2 * kBufferAlignment, std::byte{0xff});
  void* aligned = b->storage.data();
  std::size_t room = b->storage.size();
  b->base = static_cast<std::byte*>(std::align(kBufferAlignment, b->bytes, aligned, room)) +
            misalignment;
  if (initial != nullptr) std::memcpy(b->data(), initial, span * spec.element_bytes);
  // Scratch starts uninitialised; every other buffer holds the caller's data.
  const std::uint8_t element =
      spec.role == BufferRole::scratch ? kElement : kElement | kInitialised;
  b->flags.assign(span, element);
  if (!spec.is_element.empty())
    for (std::size_t i = 0; i < span; ++i)
      if (!spec.is_element[i]) b->flags[i] = 0;
  if (spec.role != BufferRole::input) b->writer.assign(span, kNoWriter);
  void* address = b->data();
  buffers_.push_back(std::move(b));
  return address;
}

EmulatedBuffers::Buffer* EmulatedBuffers::find(const void* p, std::size_t bytes,
                                                Access access) noexcept {
  for (auto& b : buffers_)
    if (b->holds(static_cast<const std::byte*>(p))) return b.get();
  report_violation(fmt::format("{} {} bytes at {}, outside every buffer of the launch",
                               verb(access), bytes, p));
  return nullptr;
}

void EmulatedBuffers::zero(void* address, std::size_t bytes) {
  auto* p = static_cast<std::byte*>(address);
  for (auto& b : buffers_) {
    if (!b->holds(p)) continue;
    std::memset(p, 0, bytes);
    const auto esize = static_cast<std::ptrdiff_t>(b->spec.element_bytes);
    const std::ptrdiff_t first = (p - b->data()) / esize;
    for (std::ptrdiff_t i = 0; i < static_cast<std::ptrdiff_t>(bytes) / esize; ++i)
      b->flags[static_cast<std::size_t>(first + i)] |= kInitialised;
    return;
  }
}

bool EmulatedBuffers::is_zero(const void* address, std::size_t bytes) const {
  const auto* p = static_cast<const std::byte*>(address);
  return std::all_of(p, p + bytes, [](std::byte v) { return v == std::byte{0}; });
}

std::optional<BufferLocation> EmulatedBuffers::locate(const void* address) const {
  const auto* p = static_cast<const std::byte*>(address);
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    const Buffer& b = *buffers_[i];
    const auto span_bytes = static_cast<std::int64_t>(b.spec.span * b.spec.element_bytes);
    if (p < b.data() || p >= b.data() + span_bytes) continue;
    const auto lead =
        static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(b.data()) % kBufferAlignment);
    return BufferLocation{static_cast<std::uint32_t>(i), b.spec.name, p - b.data() + lead,
                          span_bytes + lead};
  }
  return std::nullopt;
}

bool EmulatedBuffers::check(const void* address, std::size_t bytes, Access access) noexcept {
  Buffer* b = find(address, bytes, access);
  if (b == nullptr) return false;
  const auto offset = static_cast<std::int64_t>(static_cast<const std::byte*>(address) - b->data());
  const auto esize = static_cast<std::int64_t>(b->spec.element_bytes);
  const std::int64_t index = offset >= 0 ? offset / esize : -((-offset + esize - 1) / esize);
  if (b->spec.role == BufferRole::scratch && bytes > b->spec.element_bytes)
    return check_vector(address, bytes, bytes, access);
  if (offset % esize != 0 || bytes != b->spec.element_bytes) {
    report_violation(fmt::format("{} {} bytes at byte {} of {}, not one {}-byte element",
                                 verb(access), bytes, offset, b->spec.name, esize));
    return false;
  }
  return check_element(*b, index, access);
}

bool EmulatedBuffers::check_vector(const void* address, std::size_t bytes,
                                   std::size_t alignment, Access access) noexcept {
  Buffer* b = find(address, bytes, access);
  if (b == nullptr) return false;
  const auto offset = static_cast<const std::byte*>(address) - b->data();
  if (reinterpret_cast<std::uintptr_t>(address) % alignment != 0) {
    report_violation(fmt::format(
        "{} {} bytes at byte {} of {}, not {}-byte aligned: a misaligned vector access, which "
        "faults on the GPU",
        verb(access), bytes, offset, b->spec.name, alignment));
    return false;
  }
  const std::size_t esize = b->spec.element_bytes;
  if (bytes % esize != 0) {
    report_violation(fmt::format("{} {} bytes of {}, not a whole number of its {}-byte elements",
                                 verb(access), bytes, b->spec.name, esize));
    return false;
  }
  const std::int64_t first = offset / static_cast<std::int64_t>(esize);
  for (std::size_t i = 0; i < bytes / esize; ++i)
    if (!check_element(*b, first + static_cast<std::int64_t>(i), access)) return false;
  return true;
}

bool EmulatedBuffers::check_element(Buffer& b, std::int64_t index, Access access) noexcept {
  const BufferSpec& s = b.spec;
  if (index < 0 || index >= s.span) {
    report_violation(fmt::format("{} {}[{}], {} (its elements are {}[0..{}])", verb(access), s.name,
                                 index, index < 0 ? "before its first element" : "past its last",
                                 s.name, s.span - 1));
    return false;
  }
  const auto at = static_cast<std::size_t>(index);
  std::atomic_ref<std::uint8_t> flags(b.flags[at]);
  if ((flags.load(std::memory_order_relaxed) & kElement) == 0) {
    report_violation(fmt::format("{} {}[{}], a gap between elements of its strided layout",
                                 verb(access), s.name, index));
    return false;
  }
  if (access != Access::read && s.role == BufferRole::input) {
    report_violation(fmt::format("{} {}[{}], an input", verb(access), s.name, index));
    return false;
  }
  if (s.role == BufferRole::input) return true;
  const std::int64_t me = global_thread_index();
  std::atomic_ref<std::int64_t> writer(b.writer[at]);
  if (access == Access::read) {
    if ((flags.load(std::memory_order_relaxed) & kInitialised) == 0) {
      report_violation(fmt::format("reads {}[{}] before any thread wrote it", s.name, index));
      return false;
    }
    const std::int64_t other = writer.load(std::memory_order_relaxed);
    if (other != kNoWriter && other != me &&
        !ordered_after(me / emulated::blockDim.x, other / emulated::blockDim.x))
      report_violation(
          fmt::format("reads {}[{}], which global thread {} wrote in the same kernel: "
                      "a race (kernels do not order their blocks)",
                      s.name, index, other));
    return true;
  }
  flags.fetch_or(kInitialised | kWritten, std::memory_order_relaxed);
  if (access == Access::write) {
    const std::int64_t other = writer.exchange(me, std::memory_order_relaxed);
    if (other != kNoWriter && other != me)
      report_violation(
          fmt::format("writes {}[{}], which global thread {} also wrote in the same kernel: a race",
                      s.name, index, other));
  }
  return true;
}

float EmulatedBuffers::arrive(const void* counter, const std::function<float()>& count) {
  const long long block = emulated::blockIdx.x;
  const std::lock_guard<std::mutex> lock(arrivals_mutex_);
  std::vector<long long>& blocks = arrived_[counter];
  arrived_after_[block].insert(blocks.begin(), blocks.end());
  blocks.push_back(block);
  return count();
}

bool EmulatedBuffers::ordered_after(long long reader, long long writer) noexcept {
  const std::lock_guard<std::mutex> lock(arrivals_mutex_);
  const auto after = arrived_after_.find(reader);
  return after != arrived_after_.end() && after->second.count(writer) > 0;
}

void EmulatedBuffers::begin_kernel() {
  for (auto& b : buffers_) std::fill(b->writer.begin(), b->writer.end(), kNoWriter);
  const std::lock_guard<std::mutex> lock(arrivals_mutex_);
  arrived_.clear();
  arrived_after_.clear();
}

void EmulatedBuffers::report_unwritten_outputs() const {
  for (const auto& b : buffers_) {
    if (b->spec.role != BufferRole::output) continue;
    std::int64_t first = -1, missing = 0;
    for (std::size_t i = 0; i < b->flags.size(); ++i)
      if ((b->flags[i] & kElement) && !(b->flags[i] & kWritten)) {
        if (first < 0) first = static_cast<std::int64_t>(i);
        ++missing;
      }
    if (missing == 0) continue;
    LaunchContext& launch = launch_context();
    if (launch.violations == nullptr) return;
    launch.violations->report(
        fmt::format("{}: no thread wrote {}[{}]{}", launch.kernel_label, b->spec.name, first,
                    missing > 1 ? fmt::format(" and {} more of its elements", missing - 1) : ""));
  }
}

void EmulatedBuffers::copy_out(std::string_view name, void* destination) const {
  for (const auto& b : buffers_)
    if (b->spec.name == name)
      std::memcpy(destination, b->data(),
                  static_cast<std::size_t>(b->spec.span) * b->spec.element_bytes);
}

}  // namespace convjit::emulator
