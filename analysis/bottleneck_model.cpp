#include "analysis/bottleneck_model.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "analysis/op_roofline.hpp"
#include "dispatcher/backends/jit/wgmma_conv.hpp"

namespace convjit::analysis {

namespace {

using emulator::KernelMemoryCounters;
using emulator::MemoryOp;
using emulator::MemorySpace;

// FLOPs of one m16n8k16 (f16, bf16) or, at the same instruction rate, of
// two m16n8k8 TF32 halves: what the tensor peaks are quoted in.
constexpr double kMmaFlops = 4096;
constexpr double kSectorBytes = 32;
// One thread's 16-byte load: the bytes a thread keeps in flight when a
// kernel has no cp.async pipeline.
constexpr double kBytesPerThreadInFlight = 16;
constexpr std::string_view kMainEntry = "convjit_kernel";  // the others are first or last passes

int memory_instructions(const InstructionCounts& c) {
  return c.of(InstructionClass::ldg) + c.of(InstructionClass::stg) +
         c.of(InstructionClass::ldgsts) + c.of(InstructionClass::lds) +
         c.of(InstructionClass::sts) + c.of(InstructionClass::ldsm);
}

// Warp-level memory requests the emulator counted, one per instruction
// (a cp.async's shared side is the same instruction as its global read).
double memory_requests(const KernelMemoryCounters& m) {
  double n = 0;
  for (const emulator::SiteCounters& s : m.sites)
    if (!(s.site.space == MemorySpace::shared && s.site.op == MemoryOp::async_copy))
      n += s.instructions;
  return n;
}

// The SM-clocks its shared wavefronts take: ldmatrix's and cp.async's at
// their measured rate, the plain loads' and stores' at a bank word's.
double shared_clocks(const KernelMemoryCounters& m, const GpuThroughput& t) {
  double clocks = 0;
  for (const emulator::SiteCounters& s : m.sites) {
    if (s.site.space != MemorySpace::shared) continue;
    const bool words = s.site.op == MemoryOp::load || s.site.op == MemoryOp::store ||
                       s.site.op == MemoryOp::atomic;
    clocks +=
        s.cost / (words ? t.shared_word_wavefronts_per_clock_sm : t.shared_wavefronts_per_clock_sm);
  }
  return clocks;
}

// Whether the kernel loads (stores) through TMA (cp.async.bulk.tensor).
bool bulk_copies(const KernelMemoryCounters& m, MemoryOp op = MemoryOp::bulk_load) {
  return std::any_of(m.sites.begin(), m.sites.end(),
                     [op](const emulator::SiteCounters& s) { return s.site.op == op; });
}

// A tile's epilogue per output: the threads' store, or TMA's.
Range epilogue_per_output(const GpuThroughput& t, const KernelMemoryCounters& m) {
  return bulk_copies(m, MemoryOp::bulk_store) ? t.tma_store_epilogue_s_per_output
                                              : t.epilogue_s_per_output;
}

struct DynamicMix {
  Range total;            // warp instructions
  double float_math = 0;  // of them, FMA-pipe ones (straight-line code)
};

double float_math(const InstructionCounts& c) { return c.of(InstructionClass::float_math); }

// Scales the SASS's counts per trip of the main loop (or of the whole
// kernel, without one) by how often the emulator saw the trip's anchor:
// its MMAs, or else its memory instructions.  Inner loops (a loader's
// element-by-element path, say) run as often as their memory instructions
// say: the emulator's requests beyond those of the trips' straight-line
// code and of the code around the main loop, which each warp runs once.
// Inner loops without memory instructions leave a range: from not at all
// to once a trip.
std::optional<DynamicMix> dynamic_mix(const EntryAnalysis& e) {
  if (!e.mix || !e.memory) return std::nullopt;
  const SassLoop* loop = e.mix->main_loop ? &*e.mix->main_loop : nullptr;
  const InstructionCounts& all = loop != nullptr ? loop->counts : e.mix->whole;
  const InstructionCounts& straight = loop != nullptr ? loop->outside_inner : e.mix->whole;
  const double requests = memory_requests(*e.memory);
  double anchor_static = straight.of(InstructionClass::mma),
         anchor_dynamic = e.memory->mma_instructions;
  if (anchor_static == 0 || anchor_dynamic == 0) {
    anchor_static = memory_instructions(straight);
    anchor_dynamic = requests;
  }
  if (anchor_static == 0) return std::nullopt;
  const double trips = anchor_dynamic / anchor_static;
  // The code around the main loop (none without one: `all` is then the
  // whole kernel), which each warp runs once.
  const double warps = static_cast<double>(e.launch.blocks()) * (e.launch.threads_per_block / 32);
  const int around_memory = memory_instructions(e.mix->whole) - memory_instructions(all);
  const int inner_memory = memory_instructions(all) - memory_instructions(straight);
  const double inner_trips =
      inner_memory > 0 ? std::max(0.0, requests - trips * memory_instructions(straight) -
                                           around_memory * warps) /
                             inner_memory
                       : 0;
  const auto dynamic = [&](auto count, double inner) {
    return trips * count(straight) + inner * (count(all) - count(straight)) +
           warps * (count(e.mix->whole) - count(all));
  };
  const auto total = [](const InstructionCounts& c) { return double(c.total); };
  const Range total_range = inner_memory > 0
                                ? Range{dynamic(total, inner_trips), dynamic(total, inner_trips)}
                                : Range{dynamic(total, 0), dynamic(total, trips)};
  return DynamicMix{total_range, dynamic(float_math, inner_trips)};
}

// The DRAM bytes: what the kernel touches, plus the share of its other
// requests that miss an L2 smaller than its footprint.
double dram_bytes(const KernelMemoryCounters& m, double l2_bytes) {
  const double footprint = m.compulsory_sectors() * kSectorBytes;
  const double requested = m.total(MemorySpace::global, false) * kSectorBytes;
  if (footprint <= l2_bytes) return footprint;
  return footprint + std::max(0.0, requested - footprint) * (1 - l2_bytes / footprint);
}

Range seconds_at(double work, Range rate) { return {work / rate.high, work / rate.low}; }

// The global sectors the threads' stores of one tile touch (the
// emulator's, over the grid's tiles); TMA's bulk stores are not theirs.
double store_sectors_per_tile(const KernelMemoryCounters& m, double tiles) {
  double sectors = 0;
  for (const emulator::SiteCounters& s : m.sites)
    if (s.site.space == MemorySpace::global && s.site.op == MemoryOp::store) sectors += s.cost;
  return sectors / tiles;
}

// A round's epilogue, none but a tile kernel's main entry's: what one
// storing group holds (epilogue_outputs) at the fitted rate an output, the
// others storing beside it; or, where the stores scatter, longer: the
// sectors they touch at the SM's rate, which the tiles storing on it at
// once (`resident`) share.
Range tile_epilogue(const GpuThroughput& t, const KernelMemoryCounters& m, long long tile_outputs,
                    double tiles, double resident) {
  if (tile_outputs == 0) return {};
  const Range outputs = epilogue_per_output(t, m) * static_cast<double>(tile_outputs);
  const Range sectors = t.store_sector_s * (store_sectors_per_tile(m, tiles) * resident);
  return {std::max(outputs.low, sectors.low), std::max(outputs.high, sectors.high)};
}

// What one round of resident blocks leaves exposed: the fill and drain of
// the way the kernel feeds its math, and its epilogue.
Range round_latency(const GpuThroughput& t, const KernelMemoryCounters& m, Range epilogue) {
  const Range fill = m.wgmma_mma_equivalents > 0 ? t.round_latency_wgmma_s
                     : m.mma_instructions > 0    ? t.round_latency_mma_s
                                                 : t.round_latency_plain_s;
  return {fill.low + epilogue.low, fill.high + epilogue.high};
}

// A grid's tiles and the most one block takes: a tile a block, a
// persistent grid's tiles taken in turn (KernelEntry::persistent_tiles),
// or with Stream-K its K steps shared evenly (persistent_units), the
// busiest block's in tiles' worth.  The counts are the whole grid's
// (the emulator scales its sampled blocks by the tiles they took,
// grid_scale), so the busiest block's share stretches them once.
struct PersistentBalance {
  double tiles = 0, block_tiles = 1;
};
PersistentBalance persistent_balance(const KernelEntry& launch) {
  const double blocks = launch.blocks();
  if (launch.persistent_tiles == 0) return {blocks, 1};
  const auto tiles = static_cast<double>(launch.persistent_tiles);
  if (launch.persistent_units == 0) return {tiles, std::ceil(tiles / blocks)};
  const auto units = static_cast<double>(launch.persistent_units);
  return {tiles, std::ceil(units / blocks) * tiles / units};
}

// What a ping-pong block's epilogues add beyond the last one (which
// round_latency charges): its consumers alternate, one's epilogue under
// the other's main loop, so two tiles take 2 main + max(0, epilogue -
// main), and each of the block's tiles but the last adds half the excess.
// `main`: a tile's share of the SM-bound time.
Range ping_pong_excess(Range epilogue, Range main, double block_tiles) {
  const double tiles = (block_tiles - 1) / 2;
  return {std::max(0.0, epilogue.low - main.low) * tiles,
          std::max(0.0, epilogue.high - main.high) * tiles};
}

// Where a grid's blocks run: the scheduler gives each SM a block before
// any a second (wgmma_conv.cpp's busy_sms), so of B blocks on S SMs the
// busiest runs ceil(B / S) over the grid, at most `blocks_per_sm` at
// once, and a grid of fewer blocks than SMs leaves the rest idle.  A
// block alone on its SM has the SM's pipes to itself: the H200 timed
// ResNet-50's layer4.conv1 bwdfilt (64 blocks) in 15.0 us at two blocks
// an SM and 14.7 at one (bench/results/2026-12-04-h200), where counting
// each of its blocks at its share of a full SM had the first twice as
// long.
struct SmResidency {
  double blocks = 1;    // the busiest SM's, over the grid
  double resident = 1;  // at once on it
};
SmResidency busiest_sm(double blocks, int blocks_per_sm, int sms) {
  const double per_sm = std::max(1.0, std::ceil(blocks / sms));
  return {per_sm, std::min<double>(per_sm, blocks_per_sm)};
}

}  // namespace

Result<KernelPrediction> predict_kernel(const EntryAnalysis& e, const GpuSpec& gpu,
                                        const GemmTile* tile, long long tile_outputs) {
  const GpuThroughput* t = gpu_throughput(gpu);
  if (t == nullptr) return Status::not_available(fmt::format("no throughputs for {}", gpu.name));
  if (!e.memory) return Status::not_available("no memory counters");
  const GpuOccupancy* occ = nullptr;
  for (const GpuOccupancy& o : e.occupancy)
    if (o.gpu == &gpu) occ = &o;
  if (occ == nullptr || !occ->occupancy.is_ok())
    return Status::not_available(fmt::format("no occupancy on {}", gpu.name));
  const Occupancy& o = occ->occupancy.value();
  const KernelMemoryCounters& m = *e.memory;
  const double sm_clocks = gpu.sms * t->clock_hz;  // SM-clocks a second, device-wide

  KernelPrediction p;
  const double concurrent = static_cast<double>(o.blocks_per_sm) * gpu.sms;
  p.waves = e.launch.blocks() / concurrent;
  const PersistentBalance balance = persistent_balance(e.launch);
  const SmResidency busiest = busiest_sm(e.launch.blocks(), o.blocks_per_sm, gpu.sms);
  // The SM-bound limits are the busiest SM's blocks, a persistent block as
  // long as its most tiles, at its SM's rate.
  const double stretch = busiest.blocks * gpu.sms * balance.block_tiles / balance.tiles;
  const double warps_per_sm = o.warps_per_sm * busiest.resident / o.blocks_per_sm;
  const auto sm_limit = [&](std::string_view name, double clocks_per_sm_device) {
    p.limits.push_back({name, Range{clocks_per_sm_device, clocks_per_sm_device} *
                                  (stretch / sm_clocks)});
  };
  if (m.mma_instructions > 0 || m.wgmma_mma_equivalents > 0) {
    // Each kind of instruction at its own share of the peak.
    const double mma = m.mma_instructions * kMmaFlops / t->tensor_flops_per_clock_sm;
    const double wgmma = m.wgmma_mma_equivalents * kMmaFlops / t->tensor_flops_per_clock_sm;
    const auto at = [](double clocks, double fraction) {
      return clocks > 0 ? clocks / fraction : 0;
    };
    p.limits.push_back({"tensor", Range{at(mma, t->mma_sync_fraction.high) +
                                            at(wgmma, t->wgmma_fraction.high),
                                        at(mma, t->mma_sync_fraction.low) +
                                            at(wgmma, t->wgmma_fraction.low)} *
                                      (stretch / sm_clocks)});
  }
  if (const auto mix = dynamic_mix(e)) {
    // A scheduler issues every clock only with enough warps to pick from.
    const double per_scheduler = warps_per_sm / t->issue_per_clock_sm;
    const auto issue_rate = [&](double needed) {
      return t->issue_per_clock_sm * std::min(1.0, per_scheduler / needed);
    };
    p.limits.push_back(
        {"issue", Range{mix->total.low / issue_rate(t->issue_warps_per_scheduler.low),
                        mix->total.high / issue_rate(t->issue_warps_per_scheduler.high)} *
                      (stretch / sm_clocks)});
    // An FMA warp instruction is 32 FMAs: 64 FLOPs.
    if (mix->float_math > 0) sm_limit("fma", mix->float_math * 64 / t->fma_flops_per_clock_sm);
  }
  sm_limit("shared", shared_clocks(m, *t));
  p.limits.push_back(
      {"l2", seconds_at(m.total(MemorySpace::global, false) * kSectorBytes, t->l2_bytes_per_s)});

  // Little's law: the bytes each SM must keep in flight to draw its share.
  // A TMA kernel keeps its ring of stages in dynamic shared memory filling.
  // At the occupancy's residency on every SM, not the grid's: the small
  // grids that would keep fewer bytes in flight are a split's second pass
  // reading what the first just wrote, from the L2, whose latency the
  // model does not have (a DRAM latency stretched ResNet-50's
  // layer1.conv1.first bwdfilt's 16-block sum of 98 slices to 9.7 us,
  // where the H200 timed the whole conv in 13.4).
  const double in_flight =
      tile != nullptr ? o.blocks_per_sm * (tile->stages - 1) * (tile->bm + tile->bn) * 64.0
      : bulk_copies(m) ? o.blocks_per_sm * static_cast<double>(e.launch.dynamic_shared_bytes)
                       : o.warps_per_sm * 32 * kBytesPerThreadInFlight;
  const double needed = t->dram_latency_s.mid() * t->dram_bytes_per_s.mid() / gpu.sms;
  p.latency_stretch = std::max(1.0, needed / in_flight);
  p.limits.push_back({"dram", seconds_at(dram_bytes(m, t->l2_bytes), t->dram_bytes_per_s) *
                                  p.latency_stretch});

  for (const Limit& l : p.limits) {
    p.seconds.low = std::max(p.seconds.low, l.seconds.low);
    p.seconds.high = std::max(p.seconds.high, l.seconds.high);
    if (p.limiter.empty() || l.seconds.mid() > p.seconds_of(p.limiter)) p.limiter = l.name;
  }
  p.rounds = std::ceil(p.waves);
  const Range epilogue = tile_epilogue(*t, m, tile_outputs, balance.tiles, busiest.resident);
  p.exposed_latency = round_latency(*t, m, epilogue) * p.rounds;
  if (balance.block_tiles > 1) {
    const Range excess = ping_pong_excess(
        epilogue, p.seconds * (1 / (p.rounds * balance.block_tiles)), balance.block_tiles);
    p.exposed_latency = {p.exposed_latency.low + excess.low * p.rounds,
                         p.exposed_latency.high + excess.high * p.rounds};
  }
  if (p.exposed_latency.mid() > p.seconds.mid()) p.limiter = "latency";
  p.seconds.low += p.exposed_latency.low;
  p.seconds.high += p.exposed_latency.high;
  return p;
}

long long epilogue_outputs(std::string_view variant) {
  if (const GemmTile* tile = find_gemm_tile(variant))
    return static_cast<long long>(tile->bm) * tile->bn;
  if (const WgmmaConvConfig* wgmma = find_wgmma_config(variant))
    return std::min(wgmma->pixels, WgmmaConvTile::kPixels) *
           std::min(wgmma->filters, WgmmaConvTile::kFilters);
  return 0;
}

std::vector<VariantPrediction> predict_variant(const OpDescriptor& desc,
                                               const VariantAnalysis& analysis, bool w_unchanged) {
  const OpWork work = op_work(desc);
  // f32 on tensor cores is TF32, held to TF32's peak.
  bool tensor_math = false;
  for (const EntryAnalysis& e : analysis.entries)
    tensor_math |= e.memory && (e.memory->mma_instructions > 0 ||
                                e.memory->wgmma_mma_equivalents > 0);
  const GemmTile* tile = find_gemm_tile(analysis.variant);
  const long long tile_outputs = epilogue_outputs(analysis.variant);
  std::vector<VariantPrediction> out;
  if (analysis.entries.empty()) return out;
  for (const GpuOccupancy& o : analysis.entries.front().occupancy) {
    VariantPrediction v;
    v.gpu = o.gpu;
    if (const GpuThroughput* t = gpu_throughput(*o.gpu))
      v.roofline_seconds =
          roofline(work, t->peaks, compute_peak_tflops(t->peaks, desc.dtype, tensor_math)).ms /
          1e3;
    for (const EntryAnalysis& e : analysis.entries) {
      auto k = predict_kernel(e, *o.gpu, tile,
                              e.launch.name == kMainEntry ? tile_outputs : 0);
      if (!k.is_ok()) {
        v.missing = fmt::format("{}: {}", e.launch.name, k.status().message());
        v.kernels.clear();
        break;
      }
      k.value().skipped = w_unchanged && e.launch.copies_filters;
      if (!k.value().skipped) {
        v.seconds.low += k.value().seconds.low;
        v.seconds.high += k.value().seconds.high;
      }
      v.kernels.push_back(std::move(k).value());
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace convjit::analysis
