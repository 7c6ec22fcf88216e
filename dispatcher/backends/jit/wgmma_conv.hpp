// The host side of the Hopper convolution (kernel_templates/conv/
// conv_fwd_wgmma.cuh): where it applies, the TMA maps it reads x and w
// through, and its launch.  The maps are built here from the descriptor
// alone; each call binds them to its pointers (tensor_map_argument.hpp).
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "convjit/status.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/tensor_maps/tensor_map_argument.hpp"
#include "kernel_templates/conv/wgmma_conv_shape.cuh"

namespace convjit {

// The template's tiles (conv/wgmma_conv_shape.cuh): A's `pixels` (128 a
// consumer warpgroup) and B's `filters` (256, 128 or 64) rows, a K step's
// channels each (64, the widest, or 32 or 16: wgmma_step_channels), make
// a stage of its ring in dynamic shared memory.
struct WgmmaConvTile {
  static constexpr long long kPixels = CONVJIT_WGMMA_PIXELS, kFilters = CONVJIT_WGMMA_FILTERS,
                             kChannels = CONVJIT_WGMMA_CHANNELS,
                             kStepPixels = CONVJIT_WGMMA_STEP_PIXELS;
  static constexpr std::size_t stage_bytes(long long pixels, long long filters,
                                           long long step = kChannels) {
    return static_cast<std::size_t>((pixels + filters) * step * 2);
  }
};
// A bwdfilt's stage: two boxes of dy and two of x, each 64 x 64.
static_assert((WgmmaConvTile::kFilters + 2 * WgmmaConvTile::kChannels) *
                      WgmmaConvTile::kStepPixels * 2 ==
                  WgmmaConvTile::stage_bytes(WgmmaConvTile::kPixels, WgmmaConvTile::kFilters),
              "the bwdfilt kernel's stage is the 128 x 128 tile's size");

// The Hopper conv's variants: one template whose tile, ring and residency
// come from its Problem (CONSUMERS, TILE_N, STAGES, BLOCKS_PER_SM,
// PINGPONG), so the emulator runs them all through one build.  Two blocks
// an SM overlap one block's epilogue with the other's main loop, at 216
// registers for the consumers (their 128 threads' 216 and the producers'
// 40 fill the 64 Ki register file twice over): the 128 x 128 tile's at 3
// stages of 32 KiB, the 128 x 64 tile's (fwd and bwddata of 64 output
// channels or fewer) at 4 of 24 KiB.  The 256 x 128 tile has two consumer
// warpgroups (384 threads, one block an SM) that share each stage's
// filters: 48 KiB a stage for 4.2 MFLOP, against the 128 x 128 tile's
// 32 KiB for 2.1, for the layers whose main loop the L2's bandwidth
// bounds; the 256 x 64 tile is its analogue for 64 output channels or
// fewer, at 5 stages of 40 KiB.  The 128 x 256 tile is 256 x 128 turned
// round: its two consumers share each stage's pixels, 128 filters each,
// the same bytes and FLOPs a stage from half as many im2col rows (a GPU
// that times the two side by side tells whether TMA's im2col is bound
// by its rows or its bytes).  Ping-pong (the `p` variants, fwd and
// bwddata): a persistent block an SM, whose two consumers take its tiles
// in turn, each staging its own tile outside the ring, so that one's
// epilogue runs under the other's main loop within the block and no
// round of blocks waits for its slowest: 128 x 128 at 3 stages of 32 KiB
// and 2 x 65 KiB of staging, 128 x 64 at 6 of 24 KiB and 2 x 33 KiB.
// The `pc` variant is the 128 x 128 ping-pong tile in clusters of two
// blocks (fwd and stride-1 bwddata): each stage's 16 KiB of filters comes
// through the L2 once for the two blocks, a quarter less traffic a FLOP.
// A cluster of two fits a TPC, two SMs: an H100's or H200's 132 SMs hold
// 66 clusters of a block an SM.  Auto never leads with it (the H200 timed
// it slower than the tiles without clusters everywhere, when each
// consumer thread released a stage to the loading block by a remote
// arrival of its own; a warp's first lane does now).  The `pa` variants
// turn the cluster round: its blocks take neighbouring filter tiles of
// one pixel tile, and the first block loads each stage's im2col box into
// all of them (TMA multicast), each its own filters: where the output
// has many filter tiles, each pixel tile's A came through the L2 once a
// tile, now once a cluster (ResNet-50's layer4.conv1 at 128 x 64: 8
// filter tiles, l2 8.3 -> 4.3 us predicted).  wgmma128x64pa in clusters
// of four (a conv whose filter tiles make whole clusters: 256 output
// channels, 512, ...), wgmma128x128pa of two; the JIT cuts their
// persistent grid to the clusters the GPU holds at once
// (max_active_clusters).
// The `r` variants take a window row's S taps from one im2col box of A a
// consumer (row taps: fwd and stride-1 bwddata at stride 1 along W, a
// 64-channel K step): a stage is a tap (t, r, 0)'s box of 128 + (S - 1)
// DW rows, each tap s the same box s DW rows down, and a box of B for
// each tap, so the L2 brings a tile's im2col rows once a window row
// instead of once a tap (0.67x the bytes a K step's FLOPs at 128 x 128
// for a 3 x 3 conv, 0.56x at 256 x 128).  Its output rows are widened by
// the reach, whose anchors are computed and not stored (2 of 58 a row of
// ResNet-50's layer1, 2 of 9 of layer4); by TMA, in pieces of 8 pixels
// of a row (wgmma_store_map.hpp).  `stages` is the most: a
// conv's stages are as many as fit its stage (wgmma_conv_launch).
struct WgmmaConvConfig {
  std::string_view id;
  long long stages;  // at the widest K step (stages_at)
  long long blocks_per_sm;
  long long filters;  // the tile's N: y's filters (a bwddata: dx's channels) per block
  long long pixels = WgmmaConvTile::kPixels;  // the tile's M: 128 a consumer warpgroup
  bool ping_pong = false;  // a persistent grid, the consumers taking whole tiles in turn
  // Blocks a cluster (ping-pong only): neighbouring pixel tiles of one
  // filter tile, whose B the first block loads into all (TMA multicast),
  // or with cluster_pixels neighbouring filter tiles of one pixel tile,
  // whose A it loads into all.
  long long cluster = 1;
  bool cluster_pixels = false;
  bool row_taps = false;  // a stage takes a window row's taps (Problem::ROW_TAPS)
  // A conv's row taps (with_row_taps): the taps a stage takes and their
  // reach, (S - 1) DW, which widens each consumer's box of A.
  long long taps = 1, reach = 0;

  // A consumer's tile is 128 pixels by 128 filters at most: a tile has
  // one consumer along its pixels and one along its filters for each.
  [[nodiscard]] constexpr long long consumers() const {
    const long long along_filters = std::max(1LL, filters / WgmmaConvTile::kFilters);
    return ping_pong ? 2 : pixels / WgmmaConvTile::kPixels * along_filters;
  }
  [[nodiscard]] constexpr long long threads() const {
    return CONVJIT_WGMMA_BLOCK_THREADS(consumers());
  }
  // The ring's stages at a K step of `step` channels: as many more as the
  // step is narrower, so that as many bytes are in flight, within the
  // mbarriers the template declares.
  [[nodiscard]] constexpr long long stages_at(long long step) const {
    return std::min<long long>(stages * WgmmaConvTile::kChannels / step, CONVJIT_WGMMA_MAX_STAGES);
  }
  // A stage: A's rows, a consumer's box each (with row taps, rounded up
  // to the swizzle's 8-row repeat), then B's, a box a tap.
  [[nodiscard]] constexpr std::size_t stage_bytes(long long step) const {
    if (taps == 1) return WgmmaConvTile::stage_bytes(pixels, filters, step);
    const long long box_rows = (WgmmaConvTile::kPixels + reach + 7) / 8 * 8;
    return static_cast<std::size_t>((pixels / WgmmaConvTile::kPixels * box_rows + taps * filters) *
                                    step * 2);
  }
  [[nodiscard]] constexpr std::size_t ring_bytes(long long step = WgmmaConvTile::kChannels) const {
    return static_cast<std::size_t>(stages_at(step)) * stage_bytes(step);
  }
  // What the epilogue stages of a tile: its f32 outputs and its rows'
  // offsets in y (conv/wgmma_conv_tile.cuh's staging).
  [[nodiscard]] constexpr std::size_t staged_bytes() const {
    return static_cast<std::size_t>(pixels * filters) * sizeof(float) +
           static_cast<std::size_t>(pixels) * sizeof(std::int64_t);
  }
  // What a row-tap tile's TMA store stages (conv/wgmma_conv_tile.cuh's
  // StoreRows): 16-bit values in boxes of CONVJIT_WGMMA_ROW_STORE_SLOTS
  // slots, a box's worth for each consumer's N filters; a ping-pong
  // consumer's own, or its tile's consumers'.
  [[nodiscard]] constexpr std::size_t row_store_staged_bytes() const {
    const long long slots = CONVJIT_WGMMA_ROW_STORE_SLOTS;
    const long long consumer = std::min(filters, WgmmaConvTile::kFilters) * slots * 2;
    return static_cast<std::size_t>(ping_pong ? consumer : consumers() * consumer);
  }
  // The block's dynamic shared memory: the ring, where the epilogue stages
  // too (at the widest step the ring is the larger), but in ping-pong
  // each consumer's staging after it.
  [[nodiscard]] constexpr std::size_t shared_bytes(
      long long step = WgmmaConvTile::kChannels) const {
    if (ping_pong) return ring_bytes(step) + static_cast<std::size_t>(consumers()) * staged_bytes();
    return std::max(ring_bytes(step), staged_bytes());
  }
  // This row-tap configuration for a conv of `conv_taps` taps along W
  // reaching `conv_reach` pixels past the first: as many of its stages as
  // fit the shared memory (none: 0).
  [[nodiscard]] constexpr WgmmaConvConfig with_row_taps(long long conv_taps,
                                                        long long conv_reach) const {
    WgmmaConvConfig fitted = *this;
    fitted.taps = conv_taps, fitted.reach = conv_reach;
    while (fitted.stages > 0 && fitted.shared_bytes() > kOptInSharedLimit) --fitted.stages;
    return fitted;
  }
};
inline constexpr WgmmaConvConfig kWgmmaConfigs[] = {
    {"wgmma128x128", 4, 1, 128},
    {"wgmma128x128b2", 3, 2, 128},
    {"wgmma128x64", 4, 2, 64},
    {"wgmma256x128", 4, 1, 128, 256},
    {"wgmma256x64", 5, 1, 64, 256},
    {"wgmma128x128p", 3, 1, 128, 128, true},
    {"wgmma128x64p", 6, 1, 64, 128, true},
    {"wgmma128x128pc", 3, 1, 128, 128, true, 2},
    {"wgmma128x256", 4, 1, 256},
    {.id = "wgmma128x128r", .stages = 3, .blocks_per_sm = 1, .filters = 128, .row_taps = true},
    {.id = "wgmma256x128r",
     .stages = 2,
     .blocks_per_sm = 1,
     .filters = 128,
     .pixels = 256,
     .row_taps = true},
    {.id = "wgmma256x64r",
     .stages = 3,
     .blocks_per_sm = 1,
     .filters = 64,
     .pixels = 256,
     .row_taps = true},
    {.id = "wgmma128x64pr",
     .stages = 3,
     .blocks_per_sm = 1,
     .filters = 64,
     .ping_pong = true,
     .row_taps = true},
    {.id = "wgmma128x64pa",
     .stages = 6,
     .blocks_per_sm = 1,
     .filters = 64,
     .ping_pong = true,
     .cluster = 4,
     .cluster_pixels = true},
    {.id = "wgmma128x128pa",
     .stages = 3,
     .blocks_per_sm = 1,
     .filters = 128,
     .ping_pong = true,
     .cluster = 2,
     .cluster_pixels = true}};
// The first configuration: the one every conv the Hopper conv serves can
// take (the support checks' default), by which it is named in refusals.
inline constexpr std::string_view kWgmmaVariant = kWgmmaConfigs[0].id;

// The configuration of a Hopper conv variant, or null for another id.
[[nodiscard]] const WgmmaConvConfig* find_wgmma_config(std::string_view variant);

// The forward conv the kernel computes for `desc`: `desc` itself for a
// conv fwd, or where it folds its taps (tap_fold.hpp: a stem's 3
// channels) the conv of the folded x' and w'; for a bwddata of stride 1,
// dx as the forward conv of dy with the filters transposed (C filters of
// K channels) and their taps flipped, padded by dilation x (taps - 1) -
// pad on each side.  The kernel packs the filters so
// (conv/packed_filters.cuh, Problem::FLIP), or reads them so in place
// where their channels are contiguous (Problem::FILTERS_MN).  A strided
// bwddata (by stride phases, conv/conv_bwddata_wgmma.cuh) and a bwdfilt
// (conv/conv_bwdfilt_wgmma.cuh) have no such conv: `desc` itself.
[[nodiscard]] OpDescriptor wgmma_forward_equivalent(const OpDescriptor& desc);

// The channels of the K step the kernel takes for `desc`: 64, or 32 or
// 16 where the channels its GEMM reduces (a fwd's C, a folded conv's C',
// a bwddata's K) are no more, so that no stage multiplies the zero fill
// of channels beyond them (YOLO11n's 3 x 3 convs of 16 channels: 3/4 of
// a 64-channel step).  A bwdfilt's K step is pixels: 64.
[[nodiscard]] long long wgmma_step_channels(const OpDescriptor& desc);

// OK where `config` (by default the first) serves `desc`, else
// NOT_AVAILABLE saying which rule it breaks: f16/bf16, a conv of one group
// (a fwd's fused epilogue, any); a bwdfilt only in a 128 x 128 tile of
// one consumer; channels-last x (bwddata: dy; bwdfilt: x and dy) whose
// strides TMA can walk (16-byte multiples), conv strides up to 8 (but a
// bwddata's), and im2col corners and filter offsets within what the
// map's rank encodes.  A fwd whose channels are no whole 16-byte chunk
// (a stem's 3) is served in any layout where it folds its taps
// (tap_fold.hpp); a bwdfilt so where its dy is channels-last.  Filters
// whose own layout TMA cannot walk (K C R S), and a bwddata's whose
// channels are not contiguous, are copied first, in the order the kernel
// reads them, into the workspace; a bwddata reads the others (K R S C, a
// 1x1 conv's K C R S) in place (WgmmaConvLaunch::filters_mn).
[[nodiscard]] Status wgmma_conv_support(const OpDescriptor& desc,
                                        const WgmmaConvConfig& config = kWgmmaConfigs[0]);

// The one-consumer configuration for `desc`, as an H200 timed the three
// on ResNet-50's and YOLO11n's layers (bf16, channels-last, batch 32:
// bench/results/2026-11-28-h200).  A bwdfilt, and a fwd or bwddata by
// default: the 128 x 128 tile at two blocks an SM, whose second block
// overlaps one block's fill and epilogue with the other's main loop (no
// slower than one block of four stages on 155 of 185 layers; 0.86x its
// time, geometric mean).  The 128 x 64 tile where it pads the output's
// channels (a fwd's filters, a bwddata's dx channels) less (64 or fewer,
// 129 to 192, ...), or where its twice as many blocks (a tile each, as
// timed: before split-K) fill the GPU's block slots over their waves more
// than 1.2 times as fully (a grid of a wave or two).  That picked the
// faster of the two on all 113 fwd and bwddata layers where the Hopper
// conv leads.
[[nodiscard]] const WgmmaConvConfig& wgmma_one_consumer_config(const OpDescriptor& desc);

// Among the configurations of a block a tile, the one the analyser
// predicted fastest, with a tile of two consumers where it predicted one
// faster than the one-consumer configuration (not yet timed), only for
// tiles of 8 K steps or more: 256 x 128 where the 128 x 64 tile does not
// pad the output's channels less and 256 x 128's blocks keep at least two
// thirds as many SMs busy in their first wave as the one-consumer
// configuration's would; else 256 x 64 wherever that configuration is the
// 128 x 64 tile; else it.  A bwdfilt, or a shorter reduction: the
// one-consumer configuration.
[[nodiscard]] const WgmmaConvConfig& wgmma_tile_a_block_config(const OpDescriptor& desc);

// The variant the auto policy would offer first among the tiles of a tap
// a K step (no row taps).  A bwdfilt: wgmma_tile_a_block_config's.  A fwd
// or bwddata: 256 x 64
// where its K step is 16 channels at stride 1 or it folds its taps; else the
// ping-pong tiles, but that a two-consumer tile of a block a tile keeps
// its lead over 16 K steps or more with a 128 x 128 tile an SM or more
// (its shared filters shorten an L2-bound main loop), and split-K's
// slices theirs over 64 K steps or more where even 128 x 64 tiles would
// keep at most half the SMs busy.  Of the two, 128 x 64 where it pads the
// output's channels less or its tiles are one an SM at most; else
// 128 x 128, however short the reduction.  Never the clusters of two: on
// the H200 they were no fastest on any conv of ResNet-50 or YOLO11n, and
// 1.4-2.9x the fastest in all (bench/results/2026-12-04-h200); with
// these rules auto came within 1.2-4.1% of the fastest variant per op in
// each direction of both models.
[[nodiscard]] const WgmmaConvConfig& wgmma_tap_step_lead_config(const OpDescriptor& desc);

// The variant the auto policy offers first where the Hopper conv applies:
// wgmma_tap_step_lead_config's, but where that is a ping-pong tile or
// 256 x 64, a row-tap tile: of 256 x 64 and 128 x 64 in ping-pong, the
// one with the less tile work on the busiest SM (256 x 64 at equal work
// unless it slices its K), where that adds under a quarter to the lead's
// (predicted 0.67-0.88x the lead's time on the 3 x 3 convs of ResNet-50
// and YOLO11n it changed: bench/results/2026-12-06-row-taps; not yet
// timed on a GPU).  Then, where the lead is a ping-pong tile without row
// taps whose output channels make 4 filter tiles or more, 128 x 64 in
// clusters of four sharing their pixel tile (wgmma128x64pa) where it
// serves the conv (bench/results/2026-12-07-pixel-clusters; not yet timed
// on a GPU).
[[nodiscard]] const WgmmaConvConfig& wgmma_lead_config(const OpDescriptor& desc);

// The entries (the filters' copy where it is made; a block per output
// tile of `config` and slice of its K, or in ping-pong a block an SM (at
// most a tile each), with its ring in dynamic shared memory; with slices,
// the pass that adds their partial sums), the
// workspace, the maps and the template's constants beyond the conv's.
struct WgmmaConvLaunch {
  std::vector<KernelEntry> entries;
  std::size_t workspace_bytes = 0;
  // Map 0: x (bwddata: dy) in im2col mode (channels, W[, H[, D]], N); map
  // 1: w, or its packed copy in the workspace, tiled (channels, S, R, T,
  // filters) in boxes of `config`'s filters; a bwdfilt's map 1: dy in
  // im2col mode; with tma_store, map 2: y tiled (filters, pixels), with
  // row taps (filters, W, rows).
  std::vector<TensorMapArgument> maps;
  long long rank = 0, stages = 0, blocks_per_sm = 1;
  long long step = WgmmaConvTile::kChannels;    // a K step's channels (Problem::STEP)
  long long filters = WgmmaConvTile::kFilters;  // the tile's N (Problem::TILE_N): 256 to 32
  long long consumers = 1;  // warpgroups, 128 x 128 at most each (Problem::CONSUMERS)
  bool ping_pong = false;                       // Problem::PINGPONG: a persistent grid
  long long cluster = 1;                        // Problem::CLUSTER: blocks a cluster
  bool cluster_pixels = false;  // Problem::CLUSTER_PIXELS: the cluster shares A, not B
  long long row_taps = 1;  // Problem::ROW_TAPS: the taps along W a stage takes (1 or S)
  // Problem::TMA_STORE: the epilogue stores y by TMA, through map 2 (a
  // fwd's whole tiles where y's pixels are rows of one stride), in a
  // kernel for launches of beta 0.
  bool tma_store = false;
  // The K's slices: a bwdfilt's of the pixels (conv_bwdfilt_wgmma.cuh), a
  // fwd's or bwddata's of the taps and channels (split-K), their f32
  // partial sums added by convjit_kernel_finish.
  long long split = 1;
  // A bwdfilt's slices a cluster adds in distributed shared memory
  // (Problem::SUM_IN_CLUSTER, KernelEntry::cluster_blocks; 0: none): a
  // tile's 2 to CONVJIT_WGMMA_CLUSTER_SLICES, whose cluster stores dw (no
  // second pass), or 8 of a multiple of 8, each cluster's sum a partial
  // sum for the second pass.
  long long cluster_slices = 0;
  // The f32 partial sums a bwdfilt's blocks (or clusters) write for
  // convjit_kernel_finish to add (Problem::PARTIAL_SUMS; 0: they store dw
  // themselves): a slice's or a cluster's each, or one where the conv
  // folds its taps or dw's channels lie apart.
  long long partial_sums = 0;
  // Stream-K's blocks (Problem::STREAM_K; 0: none): a ping-pong grid
  // sharing its tiles' K steps evenly, the parts of a tile added in the
  // kernel (conv/wgmma_conv_tile.cuh), through slots and counters in the
  // workspace.
  long long stream_k = 0;
  // The workspace's bytes the launch must find zero and leaves zero:
  // Stream-K's counters (KernelSource::zeroed_bytes).
  std::size_t zeroed_offset = 0, zeroed_bytes = 0;
  // The partial sums in the workspace, in floats (Problem::PARTIALS): a
  // fwd's or bwddata's after the filters' copy (Stream-K's slots too), a
  // folded bwdfilt's after x'.
  long long partials_offset = 0;
  // A strided bwddata's map origin in dy, D H W (conv_bwddata_wgmma.cuh).
  std::array<std::int64_t, 3> origin{};
  bool packed = false;  // the first pass copies w into the workspace (convjit_kernel_prepare)
  bool flip = false;    // the copy's taps are w's flipped (bwddata)
  // A bwddata's map 1 over its filters themselves (channels contiguous):
  // B MN-major, in boxes of 64 channels by the K step's filters, a
  // stride-1 one's taps flipped as the producer loads them
  // (Problem::FILTERS_MN); no copy.
  bool filters_mn = false;
  // A strided bwddata with filters_mn whose stride phases include some no
  // tap lands on (a 1x1 stride-2 conv's three of four): the first pass
  // writes beta dx there, and the tiles cover the phases with taps alone
  // (Problem::FILL_PHASES).  With a copy of w, those phases' tiles write
  // it instead.
  bool fills_phases = false;
  // The first pass folds the conv's horizontal taps into its channels
  // (tap_fold.hpp): x' at the workspace's start, a fwd's w' this many
  // elements in (Problem::FOLD, FOFFSET); the maps read them, the Problem
  // is their conv's.  A bwdfilt's partial sums of dw' follow x', even
  // with one slice: the second pass unfolds them.
  bool folded = false;
  long long fold_filters_offset = 0;
};
// `variant`'s tile, but a 64-filter tile's N 32 where the output has 32
// channels or fewer and B is read K-major (Problem::TILE_N): half the
// wgmmas a step, and half the tile its epilogue stages.
[[nodiscard]] WgmmaConvLaunch wgmma_conv_launch(const OpDescriptor& desc,
                                                const WgmmaConvConfig& variant);

}  // namespace convjit
