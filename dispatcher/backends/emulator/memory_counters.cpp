#include "dispatcher/backends/emulator/memory_counters.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace convjit::emulator {

namespace {

constexpr unsigned kBanks = 32;
constexpr unsigned kBankBytes = 4;
constexpr unsigned kSectorBytes = 32;

// The lanes one shared-memory phase serves together.
unsigned phase_of(const AccessSite& site, unsigned lane) {
  if (site.op == MemoryOp::ldmatrix) return lane / 8;  // one 8x8 matrix's rows
  if (site.bytes <= 4) return 0;
  return lane / (site.bytes == 8 ? 16 : 8);
}

// Wavefronts of one phase: the most distinct words any bank holds.
unsigned phase_wavefronts(std::span<const std::int64_t> words) {
  std::array<unsigned, kBanks> load{};
  for (std::size_t i = 0; i < words.size(); ++i) {
    const bool repeated = std::find(words.begin(), words.begin() + static_cast<std::ptrdiff_t>(i),
                                    words[i]) != words.begin() + static_cast<std::ptrdiff_t>(i);
    if (!repeated) ++load[static_cast<std::size_t>(words[i] % kBanks)];
  }
  return *std::max_element(load.begin(), load.end());
}

}  // namespace

const char* memory_op_name(MemorySpace space, MemoryOp op) {
  const bool global = space == MemorySpace::global;
  switch (op) {
    case MemoryOp::load:
      return global ? "LDG" : "LDS";
    case MemoryOp::store:
      return global ? "STG" : "STS";
    case MemoryOp::atomic:
      return global ? "RED/ATOMG" : "ATOMS";
    case MemoryOp::async_copy:
      return global ? "LDGSTS (global read)" : "LDGSTS (shared write)";
    case MemoryOp::ldmatrix:
      return "LDSM";
    case MemoryOp::bulk_load:
      return "UTMALDG";
    case MemoryOp::bulk_store:
      return "UTMASTG";
  }
  return "?";
}

MemoryCost shared_wavefronts(const AccessSite& site, std::span<const LaneAccess> lanes) {
  // Words per phase; a phase is at most 8 lanes of 16 bytes or 32 of 4.
  std::array<std::vector<std::int64_t>, 32> phases;
  const std::int64_t words_per_lane = std::max<std::int64_t>(1, site.bytes / kBankBytes);
  for (const LaneAccess& a : lanes)
    for (std::int64_t w = 0; w < words_per_lane; ++w)
      phases[phase_of(site, a.lane)].push_back(a.offset / kBankBytes + w);
  MemoryCost cost;
  for (const auto& words : phases) {
    if (words.empty()) continue;
    cost.actual += phase_wavefronts(words);
    ++cost.ideal;
  }
  return cost;
}

MemoryCost global_sectors(const AccessSite& site, std::span<const LaneAccess> lanes) {
  std::vector<std::pair<std::int64_t, std::int64_t>> ranges;  // [first, last] byte
  ranges.reserve(lanes.size());
  for (const LaneAccess& a : lanes) ranges.emplace_back(a.offset, a.offset + site.bytes - 1);
  std::sort(ranges.begin(), ranges.end());
  std::int64_t bytes = 0, sectors = 0, last_byte = -1, last_sector = -1;
  for (const auto& [first, last] : ranges) {
    if (last > last_byte) bytes += last - std::max(first, last_byte + 1) + 1;
    last_byte = std::max(last_byte, last);
    const std::int64_t from = std::max(first / kSectorBytes, last_sector + 1);
    if (last / kSectorBytes >= from) sectors += last / kSectorBytes - from + 1;
    last_sector = std::max(last_sector, last / kSectorBytes);
  }
  return {static_cast<unsigned>(sectors),
          static_cast<unsigned>((bytes + kSectorBytes - 1) / kSectorBytes)};
}

double KernelMemoryCounters::total(MemorySpace space, bool ideal) const {
  double sum = 0;
  for (const SiteCounters& s : sites)
    if (s.site.space == space) sum += ideal ? s.ideal : s.cost;
  return sum;
}

double KernelMemoryCounters::instructions(MemorySpace space) const {
  double sum = 0;
  for (const SiteCounters& s : sites)
    if (s.site.space == space) sum += s.instructions;
  return sum;
}

double KernelMemoryCounters::compulsory_sectors() const {
  double sum = 0;
  for (const BufferFootprint& f : footprint) sum += f.sectors;
  return sum;
}

const SiteCounters* KernelMemoryCounters::worst() const {
  const SiteCounters* worst = nullptr;
  for (const SiteCounters& s : sites)
    if (s.excess() > 0 && (worst == nullptr || s.excess() > worst->excess())) worst = &s;
  return worst;
}

}  // namespace convjit::emulator
