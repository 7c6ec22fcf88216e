#include "dispatcher/backends/emulator/access_recorder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <tuple>

#include "dispatcher/backends/emulator/block_scheduler.hpp"
#include "dispatcher/backends/emulator/emulated_buffers.hpp"
#include "dispatcher/backends/emulator/launch_context.hpp"

namespace convjit::emulator {

namespace {
constexpr std::int64_t kSectorBytes = 32;

// The launch's buffer holding `address`, named to `recorder` the first
// time; nullopt outside every buffer (its check reports that).
std::optional<BufferLocation> recorded_buffer(AccessRecorder& recorder, const void* address) {
  std::optional<BufferLocation> at = launch_context().buffers->locate(address);
  if (at && !recorder.named(MemorySpace::global, at->buffer)) {
    recorder.name(MemorySpace::global, at->buffer, std::string(at->name));
    recorder.note_buffer(at->buffer, std::string(at->name), at->bytes);
  }
  return at;
}
}  // namespace

void AccessRecorder::record(unsigned thread, const AccessSite& site, std::int64_t offset) {
  pending_.push_back({thread / kWarpSize, thread % kWarpSize, site, offset});
  if (site.space != MemorySpace::global) return;
  Buffer& b = buffers_[site.object];
  for (std::int64_t s = offset / kSectorBytes; s <= (offset + site.bytes - 1) / kSectorBytes; ++s)
    b.sectors.insert(s);
}

void AccessRecorder::record_bulk(std::uint32_t object, MemoryOp op, std::size_t element_bytes,
                                 std::span<const std::int64_t> offsets) {
  Buffer& b = buffers_[object];
  std::unordered_set<std::int64_t> touched;
  for (std::int64_t offset : offsets) {
    touched.insert(offset / kSectorBytes);
    b.sectors.insert(offset / kSectorBytes);
  }
  const auto bytes = static_cast<std::int64_t>(offsets.size() * element_bytes);
  Totals& t = sites_[{MemorySpace::global, op, 0, 0, object}];
  ++t.instructions;
  t.cost += touched.size();
  t.ideal += static_cast<std::uint64_t>((bytes + kSectorBytes - 1) / kSectorBytes);
}

bool AccessRecorder::named(MemorySpace space, std::uint32_t object) const {
  return names_.contains({space, object});
}

void AccessRecorder::name(MemorySpace space, std::uint32_t object, std::string name) {
  names_[{space, object}] = std::move(name);
}

void AccessRecorder::note_buffer(std::uint32_t object, const std::string& name,
                                 std::int64_t bytes) {
  Buffer& b = buffers_[object];
  b.name = name;
  b.bytes = bytes;
}

void AccessRecorder::end_interval() {
  // Each lane's accesses to a site stay in the order it made them; the
  // k-th of every lane form the warp's k-th instruction there.
  std::stable_sort(pending_.begin(), pending_.end(), [](const Access& a, const Access& b) {
    return std::tie(a.warp, a.site, a.lane) < std::tie(b.warp, b.site, b.lane);
  });
  struct Numbered {
    const Access* access;
    unsigned instance;
  };
  std::vector<Numbered> numbered;
  numbered.reserve(pending_.size());
  for (std::size_t i = 0, instance = 0; i < pending_.size(); ++i) {
    const bool same_lane = i > 0 && pending_[i - 1].warp == pending_[i].warp &&
                           pending_[i - 1].site == pending_[i].site &&
                           pending_[i - 1].lane == pending_[i].lane;
    instance = same_lane ? instance + 1 : 0;
    numbered.push_back({&pending_[i], static_cast<unsigned>(instance)});
  }
  std::stable_sort(numbered.begin(), numbered.end(), [](const Numbered& a, const Numbered& b) {
    return std::tie(a.access->warp, a.access->site, a.instance) <
           std::tie(b.access->warp, b.access->site, b.instance);
  });
  std::vector<LaneAccess> lanes;
  for (std::size_t i = 0; i < numbered.size(); ++i) {
    const Access& a = *numbered[i].access;
    lanes.push_back({a.lane, a.offset});
    const bool last = i + 1 == numbered.size() || numbered[i + 1].access->warp != a.warp ||
                      numbered[i + 1].access->site != a.site ||
                      numbered[i + 1].instance != numbered[i].instance;
    if (!last) continue;
    count(a.site, lanes);
    lanes.clear();
  }
  pending_.clear();
}

void AccessRecorder::count(const AccessSite& site, const std::vector<LaneAccess>& lanes) {
  const MemoryCost c = site.space == MemorySpace::shared ? shared_wavefronts(site, lanes)
                                                         : global_sectors(site, lanes);
  Totals& t = sites_[site];
  ++t.instructions;
  t.cost += c.actual;
  t.ideal += c.ideal;
}

KernelMemoryCounters AccessRecorder::counters(double scale) const {
  KernelMemoryCounters k;
  k.mma_instructions = scale * static_cast<double>(mma_);
  k.wgmma_mma_equivalents = scale * static_cast<double>(wgmma_equivalents_);
  for (const auto& [site, t] : sites_)
    k.sites.push_back({site, names_.at({site.space, site.object}), scale * static_cast<double>(t.instructions),
                       scale * static_cast<double>(t.cost), scale * static_cast<double>(t.ideal)});
  for (const auto& [object, b] : buffers_) {
    if (b.sectors.empty()) continue;
    const std::int64_t size = (b.bytes + kSectorBytes - 1) / kSectorBytes;
    k.footprint.push_back(
        {b.name, std::min(scale * static_cast<double>(b.sectors.size()), static_cast<double>(size)),
         size});
  }
  return k;
}

void note_global_access(const void* address, std::size_t bytes, MemoryOp op) {
  BlockScheduler& block = BlockScheduler::current();
  AccessRecorder* recorder = block.recorder();
  if (recorder == nullptr) return;
  const std::optional<BufferLocation> at = recorded_buffer(*recorder, address);
  if (!at) return;
  recorder->record(block.running_thread(),
                   {MemorySpace::global, op, static_cast<std::uint16_t>(bytes), 0, at->buffer},
                   at->offset);
}

void note_bulk_global_access(std::span<const std::byte* const> elements,
                             std::size_t element_bytes, MemoryOp op) {
  AccessRecorder* recorder = BlockScheduler::current().recorder();
  if (recorder == nullptr) return;
  // A box lies in one tensor: the buffer is the first in-bounds element's,
  // and the others' offsets follow from their distance to it.
  const std::byte* first = nullptr;
  std::optional<BufferLocation> at;
  std::vector<std::int64_t> offsets;
  offsets.reserve(elements.size());
  for (const std::byte* e : elements) {
    if (e == nullptr) continue;
    if (first == nullptr) {
      first = e;
      at = recorded_buffer(*recorder, e);
      if (!at) return;
    }
    offsets.push_back(at->offset + (e - first));
  }
  if (!at) return;  // wholly outside the tensor: no memory traffic
  recorder->record_bulk(at->buffer, op, element_bytes, offsets);
}

void note_wgmma(unsigned n, unsigned k) {
  BlockScheduler& block = BlockScheduler::current();
  AccessRecorder* recorder = block.recorder();
  // wgmma is warpgroup-wide; an m16n8k16 mma.sync multiplies 16 x 8 x 16.
  constexpr unsigned kWarpgroup = 4 * kWarpSize, kMmaMacs = 16 * 8 * 16, kWgmmaRows = 64;
  if (recorder != nullptr && block.running_thread() % kWarpgroup == 0)
    recorder->count_wgmma(kWgmmaRows * n * k / kMmaMacs);
}

void note_shared_access(const SharedRegion& region, long long element, std::size_t bytes,
                        MemoryOp op, unsigned shape) {
  BlockScheduler& block = BlockScheduler::current();
  AccessRecorder* recorder = block.recorder();
  if (recorder == nullptr) return;
  if (!recorder->named(MemorySpace::shared, region.id()))
    recorder->name(MemorySpace::shared, region.id(),
                   fmt::format("shared {} (line {})", region.name(), region.line()));
  recorder->record(block.running_thread(),
                   {MemorySpace::shared, op, static_cast<std::uint16_t>(bytes),
                    static_cast<std::uint8_t>(shape), region.id()},
                   element * static_cast<long long>(region.element_bytes()));
}

void note_mma() {
  BlockScheduler& block = BlockScheduler::current();
  AccessRecorder* recorder = block.recorder();
  // mma.sync is warp-wide: every lane of the warp takes part.
  if (recorder != nullptr && block.running_thread() % kWarpSize == 0) recorder->count_mma();
}

}  // namespace convjit::emulator
