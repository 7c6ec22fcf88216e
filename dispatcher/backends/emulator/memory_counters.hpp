// What one warp-level memory instruction costs the memory system, from the
// addresses its lanes give, as an NVIDIA GPU of compute capability 8.x or
// 9.x serves it; and a kernel's totals over the instructions the emulator
// saw (access_recorder.hpp).
//
// Shared memory has 32 banks of 4 bytes; a wavefront serves at most one
// 4-byte word per bank (a word many lanes read is broadcast).  A warp's
// accesses are split into phases: all 32 lanes for accesses of up to 4
// bytes, half warps for 8 bytes, quarter warps for 16, and for ldmatrix the
// 8 row addresses of each 8x8 matrix.  A phase takes as many wavefronts as
// its most loaded bank has distinct words; the ideal is one.
//
// Global memory is served in 32-byte sectors: a request costs the distinct
// sectors its lanes' bytes fall in; the ideal is its distinct bytes packed
// into whole sectors.  Offsets are from the start of each buffer, which
// cudaMalloc aligns to 256 bytes.
#pragma once

#include <compare>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace convjit::emulator {

enum class MemorySpace : std::uint8_t { global, shared };

// async_copy is cp.async: its global read, and its shared write.
// bulk_load and bulk_store are TMA's copies of a box (cp.async.bulk.tensor),
// counted per copy: the copy engine's request, not a warp's.
enum class MemoryOp : std::uint8_t {
  load, store, atomic, async_copy, ldmatrix, bulk_load, bulk_store
};

[[nodiscard]] const char* memory_op_name(MemorySpace space, MemoryOp op);

// A static memory instruction as the emulator tells them apart: what it
// touches and how.  `object` numbers a launch's global buffers, or a
// block's shared arrays.
struct AccessSite {
  MemorySpace space = MemorySpace::global;
  MemoryOp op = MemoryOp::load;
  std::uint16_t bytes = 0;   // per lane; 16 per row for ldmatrix
  std::uint8_t shape = 0;    // ldmatrix: its matrices (1, 2 or 4)
  std::uint32_t object = 0;
  auto operator<=>(const AccessSite&) const = default;
};

struct LaneAccess {
  unsigned lane = 0;
  std::int64_t offset = 0;  // bytes from the start of the buffer or array
};

struct MemoryCost {
  unsigned actual = 0;
  unsigned ideal = 0;
};

// Wavefronts of one shared-memory warp instruction (its lanes that access).
[[nodiscard]] MemoryCost shared_wavefronts(const AccessSite& site,
                                           std::span<const LaneAccess> lanes);
// 32-byte sectors of one global-memory warp instruction.
[[nodiscard]] MemoryCost global_sectors(const AccessSite& site, std::span<const LaneAccess> lanes);

// One static instruction's totals over a kernel, scaled to its grid.
struct SiteCounters {
  AccessSite site;
  std::string object;          // "x", "shared tile (line 12)"
  double instructions = 0;     // warp-level requests
  double cost = 0;             // wavefronts (shared) or sectors (global)
  double ideal = 0;
  [[nodiscard]] double excess() const { return cost - ideal; }
};

// The distinct sectors a kernel touches in one global buffer: what it
// must move between DRAM and L2 at least.
struct BufferFootprint {
  std::string name;
  double sectors = 0;          // scaled to the grid, at most the buffer's
  std::int64_t buffer_sectors = 0;
};

struct KernelMemoryCounters {
  unsigned blocks = 0;          // in the grid
  unsigned sampled_blocks = 0;  // run to count; the totals are scaled to the grid (grid_scale)
  std::vector<SiteCounters> sites;
  // Warp-level mma.sync instructions, counted alongside: what the tensor
  // pipe must do (tiles past the problem's edges included).
  double mma_instructions = 0;
  // Warpgroup wgmma instructions, as the m16n8k16 mma.syncs of the same
  // FLOPs (an m64nNk16 is N/2 of them): the tensor pipe's work at
  // wgmma's rate.
  double wgmma_mma_equivalents = 0;
  std::vector<BufferFootprint> footprint;

  [[nodiscard]] double total(MemorySpace space, bool ideal) const;
  [[nodiscard]] double instructions(MemorySpace space) const;
  [[nodiscard]] double compulsory_sectors() const;
  // The instruction whose cost most exceeds its ideal; null when none does.
  [[nodiscard]] const SiteCounters* worst() const;
};

}  // namespace convjit::emulator
