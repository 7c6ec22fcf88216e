#include "dispatcher/backends/emulator/bulk_tensor_copy.hpp"

#include <fmt/format.h>

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "dispatcher/backends/emulator/access_recorder.hpp"
#include "dispatcher/backends/emulator/block_scheduler.hpp"
#include "dispatcher/backends/emulator/bulk_tensor_box.hpp"
#include "dispatcher/backends/emulator/emulated_buffers.hpp"
#include "dispatcher/backends/emulator/launch_context.hpp"

namespace convjit::emulator {

namespace {

// CUDA Programming Guide, "Tensor Memory Access" requirements on sm_90.
constexpr std::size_t kSharedAlignment = 128;

const char* instruction(const BulkTensorCopy& copy, bool load) {
  if (!load) return "cp.async.bulk.tensor (store)";
  return copy.mode == TensorMapMode::tiled ? "cp.async.bulk.tensor (tile load)"
                                           : "cp.async.bulk.tensor (im2col load)";
}

// What the emulator cannot reproduce exactly, refused rather than guessed.
std::string unemulated(const TensorMapSpec& spec) {
  if (spec.interleave != TensorMapInterleave::none)
    return "an interleaved tensor map is not emulated; convjit's kernels use INTERLEAVE_NONE";
  if (spec.nan_fill)
    return "the OOB-NaN fill is not emulated (the ISA leaves its bits unspecified); use zero fill";
  if (spec.swizzle != TensorMapSwizzle::none && box_row_bytes(spec) != swizzle_span(spec.swizzle))
    return fmt::format(
        "a swizzled box row of {} bytes, narrower than the {}-byte swizzle, is not emulated (the "
        "ISA leaves the padding of its rows unspecified); make the row fill the span",
        box_row_bytes(spec), swizzle_span(spec.swizzle));
  return {};
}

// The map and the coordinates; an empty string when the copy may go on.
std::string map_problem(const BulkTensorCopy& copy, bool load) {
  const TensorMapSpec* spec = copy.map->spec;
  if (spec == nullptr) return "its tensor map is one the launch did not set";
  if (spec->mode != copy.mode)
    return fmt::format("its tensor map is a{} map",
                       spec->mode == TensorMapMode::tiled ? " tiled" : "n im2col");
  if (copy.coords.size() != spec->rank)
    return fmt::format("it gives {} coordinates to a rank-{} map", copy.coords.size(), spec->rank);
  if (std::string why = unemulated(*spec); !why.empty()) return why;
  // Not in the ISA's text, but the hardware's rule (an H200 stopped with an
  // illegal instruction at -12 bytes and copied at 144: bench/results/
  // 2026-11-27-h200/tma-probe).
  const long long inner = copy.coords[0] * static_cast<long long>(element_bytes(spec->element));
  if (inner % 16 != 0)
    return fmt::format(
        "its innermost coordinate {} is {} bytes into dimension 0, not a multiple of 16: the GPU "
        "stops with an illegal instruction; start boxes at 16-byte multiples",
        copy.coords[0], inner);
  if (!load)
    for (std::size_t d = 0; d < copy.coords.size(); ++d)
      if (copy.coords[d] < 0)
        return fmt::format("a store's coordinate {} is {}: the ISA requires non-negative ones", d,
                           copy.coords[d]);
  if (copy.mode == TensorMapMode::im2col)
    return im2col_coordinate_problem(*spec, copy.coords, copy.offsets);
  return {};
}

// The shared side: alignment, bounds, and whole elements.
std::string shared_problem(const BulkTensorCopy& copy, std::size_t bytes) {
  const SharedRegion& r = *copy.region;
  const std::size_t element = r.element_bytes();
  const auto offset = static_cast<long long>(element) * copy.index;
  const std::size_t repeat = swizzle_repeat(copy.map->spec->swizzle);
  if (16 % element != 0)
    return fmt::format("shared {} has {}-byte elements; a TMA copy needs 1, 2, 4, 8 or 16",
                       r.name(), element);
  if (offset % static_cast<long long>(kSharedAlignment) != 0)
    return fmt::format("shared {}[{}] is byte {} of the array, not {}-byte aligned", r.name(),
                       copy.index, offset, kSharedAlignment);
  if (r.alignment() < std::max(repeat, kSharedAlignment))
    return fmt::format(
        "shared {} is declared {}-byte aligned; a TMA copy needs {} ({} for its swizzle's "
        "pattern): declare it with CONVJIT_SHARED_ARRAY_ALIGNED",
        r.name(), r.alignment(), kSharedAlignment, repeat);
  if (offset < 0 ||
      offset + static_cast<long long>(bytes) > r.count() * static_cast<long long>(element))
    return fmt::format("its {}-byte box at shared {}[{}] overruns the array's {} elements", bytes,
                       r.name(), copy.index, r.count());
  return {};
}

bool refused(const BulkTensorCopy& copy, bool load, std::size_t bytes) {
  std::string why = map_problem(copy, load);
  if (why.empty()) why = shared_problem(copy, bytes);
  if (why.empty()) return false;
  report_violation(fmt::format("{}: {}", instruction(copy, load), why));
  return true;
}

BoxElements walk(const BulkTensorCopy& copy) {
  return copy.mode == TensorMapMode::tiled ? tiled_box(*copy.map->spec, copy.coords)
                                           : im2col_box(*copy.map->spec, copy.coords, copy.offsets);
}

// Where box byte `linear` lands in the array: the swizzle acts on the
// address, whose base is aligned to its repeat.
std::size_t placed(const BulkTensorCopy& copy, std::size_t linear) {
  const std::size_t start = copy.region->element_bytes() * static_cast<std::size_t>(copy.index);
  return swizzled_offset(start + linear, copy.map->spec->swizzle) - start;
}

// The load, into each block of `mask` (cluster ranks): the issuing
// block's own arrays, or each masked block's copies of them.
void issue_to_blocks(BulkLoad load, unsigned mask) {
  BlockScheduler& cluster = BlockScheduler::current();
  const unsigned blocks = cluster.cluster_blocks();
  if (mask >> blocks != 0) {
    report_violation(
        fmt::format("cp.async.bulk.tensor (multicast load): its mask {:#06x} names blocks past the "
                    "cluster's {}: name ranks below %cluster_nctarank",
                    mask, blocks));
    return;
  }
  const unsigned last = static_cast<unsigned>(std::bit_width(mask)) - 1;
  for (unsigned rank = 0; rank <= last; ++rank) {
    if ((mask >> rank & 1u) == 0) continue;
    SharedRegion* to = cluster.peer_region(*load.region, rank);
    SharedRegion* bar = cluster.peer_region(*load.bar.region, rank);
    if (to == nullptr || bar == nullptr) return;
    const MbarrierKey key{bar, load.bar.index};
    if (!cluster.check_remote(key, "completes a multicast TMA load on") ||
        !to->begin_async_write(load.first, load.count, AsyncWriter::tma))
      return;
    // The last block takes the bytes; the others a copy.
    std::vector<std::byte> data = rank == last ? std::move(load.data) : load.data;
    cluster.issue_bulk_load({to, load.first, load.count, std::move(data), key, 0});
  }
}

}  // namespace

void issue_bulk_tensor_load(const BulkTensorCopy& copy, const MbarrierKey& bar,
                            unsigned multicast) {
  if (copy.map->spec == nullptr) return (void)refused(copy, true, 0);
  const TensorMapSpec& spec = *copy.map->spec;
  const std::size_t bytes = box_bytes(spec), element = element_bytes(spec.element);
  if (refused(copy, true, bytes)) return;
  BulkLoad load;
  load.region = copy.region;
  load.bar = bar;
  load.data.assign(bytes, std::byte{0});  // out-of-bounds elements read as zero
  const BoxElements box = walk(copy);
  for (std::size_t i = 0; i < box.size(); ++i) {
    if (box[i] == nullptr) continue;
    std::byte* to = load.data.data() + placed(copy, i * element);
    if (launch_context().buffers->check(box[i], element, Access::read))
      std::memcpy(to, box[i], element);
    else
      std::memset(to, 0xff, element);
  }
  note_bulk_global_access(box, element, MemoryOp::bulk_load);
  const auto region_element = static_cast<long long>(copy.region->element_bytes());
  load.first = copy.index;
  load.count = static_cast<long long>(bytes) / region_element;
  issue_to_blocks(std::move(load),
                  multicast != 0 ? multicast : 1u << BlockScheduler::current().running_rank());
}

// The shared array's elements (from the copy's) whose bytes a store
// writes to the tensor: a box element past it is read, but its value
// goes nowhere (a row-tap tile's pieces of 8 pixels past a row's last).
std::vector<std::uint8_t> stored_elements(const BulkTensorCopy& copy, const BoxElements& box,
                                          std::size_t count) {
  const std::size_t element = element_bytes(copy.map->spec->element);
  std::vector<std::uint8_t> stored(count, 0);
  for (std::size_t i = 0; i < box.size(); ++i)
    if (box[i] != nullptr) stored[placed(copy, i * element) / copy.region->element_bytes()] = 1;
  return stored;
}

void issue_bulk_tensor_store(const BulkTensorCopy& copy) {
  if (copy.map->spec == nullptr) return (void)refused(copy, false, 0);
  const TensorMapSpec& spec = *copy.map->spec;
  const std::size_t bytes = box_bytes(spec), element = element_bytes(spec.element);
  if (refused(copy, false, bytes)) return;
  const auto count = static_cast<long long>(bytes / copy.region->element_bytes());
  const BoxElements box = walk(copy);
  if (!copy.region->begin_async_read(copy.index, count, AsyncReader::tma_store,
                                     stored_elements(copy, box, static_cast<std::size_t>(count))))
    return;
  BulkStoreGroups& groups = BlockScheduler::current().bulk_stores();
  groups.reading.push_back({copy.region, copy.index, count, groups.open_group});
  const std::byte* source = copy.region->raw(copy.index);
  note_bulk_global_access(box, element, MemoryOp::bulk_store);
  for (std::size_t i = 0; i < box.size(); ++i) {
    if (box[i] == nullptr) continue;  // out of bounds: not written
    auto* to = const_cast<std::byte*>(box[i]);
    if (launch_context().buffers->check(to, element, Access::write))
      std::memcpy(to, source + placed(copy, i * element), element);
  }
}

}  // namespace convjit::emulator
