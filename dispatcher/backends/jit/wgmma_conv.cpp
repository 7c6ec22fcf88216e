#include "dispatcher/backends/jit/wgmma_conv.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <optional>
#include <utility>

#include "dispatcher/backends/jit/bwddata_as_forward.hpp"
#include "dispatcher/backends/jit/ceil_div.hpp"
#include "dispatcher/backends/jit/filter_copy.hpp"
#include "dispatcher/backends/jit/stride_phases.hpp"
#include "dispatcher/backends/jit/tap_fold.hpp"
#include "dispatcher/backends/jit/wgmma_store_map.hpp"
#include "dispatcher/descriptor/canonical_layout.hpp"
#include "dispatcher/settings.hpp"
#include "dispatcher/tensor_maps/tensor_map_spec.hpp"

namespace convjit {

namespace {

constexpr std::int64_t kElementBytes = 2;  // f16, bf16
constexpr std::int64_t kMaxTraversalStride = 8;
constexpr long long kHopperSms = 132;  // an H100's or H200's (SXM)
// A streaming pass's threads (a strided bwddata's fill, a bwdfilt's sum of
// its slices): one wave of the GPU's resident threads, 2048 an SM, which
// loop over the rest, where a thread an item would start rounds of short
// blocks one after another (the analyser charges each round's start).
constexpr long long kWaveThreads = kHopperSms * 2048;

constexpr const WgmmaConvConfig& kTwoBlocks = kWgmmaConfigs[1];
constexpr const WgmmaConvConfig& kHalfTile = kWgmmaConfigs[2];
constexpr const WgmmaConvConfig& kWideTile = kWgmmaConfigs[3];
constexpr const WgmmaConvConfig& kWideHalfTile = kWgmmaConfigs[4];
constexpr const WgmmaConvConfig& kPingPong = kWgmmaConfigs[5];
constexpr const WgmmaConvConfig& kHalfPingPong = kWgmmaConfigs[6];
static_assert(kTwoBlocks.filters == WgmmaConvTile::kFilters && kTwoBlocks.blocks_per_sm == 2);
static_assert(kHalfTile.filters * 2 == WgmmaConvTile::kFilters);
static_assert(kWideTile.filters == kTwoBlocks.filters && kWideTile.consumers() == 2);
static_assert(kWideHalfTile.filters == kHalfTile.filters && kWideHalfTile.consumers() == 2);
static_assert(kPingPong.ping_pong && kPingPong.filters == kTwoBlocks.filters);
static_assert(kHalfPingPong.ping_pong && kHalfPingPong.filters == kHalfTile.filters);
constexpr const WgmmaConvConfig& kWideFilterTile = kWgmmaConfigs[8];
static_assert(kWideFilterTile.filters == 2 * WgmmaConvTile::kFilters &&
              kWideFilterTile.consumers() == 2 && kWideFilterTile.pixels == WgmmaConvTile::kPixels);
// kWgmmaConfigs[9] to [12]: the `r` variants; [13] on: the `pa` ones.
constexpr std::size_t kRowTapConfigs = 9, kPixelClusterConfigs = 13;
constexpr const WgmmaConvConfig& kWideHalfRowTaps = kWgmmaConfigs[11];
constexpr const WgmmaConvConfig& kHalfPingPongRowTaps = kWgmmaConfigs[12];
static_assert(kWideHalfRowTaps.row_taps && kWideHalfRowTaps.filters == kWideHalfTile.filters &&
              kWideHalfRowTaps.pixels == kWideHalfTile.pixels);
static_assert(kHalfPingPongRowTaps.row_taps && kHalfPingPongRowTaps.ping_pong &&
              kHalfPingPongRowTaps.filters == kHalfPingPong.filters);
constexpr const WgmmaConvConfig& kHalfPingPongPixelCluster = kWgmmaConfigs[13];
static_assert(kHalfPingPongPixelCluster.cluster_pixels && kHalfPingPongPixelCluster.ping_pong &&
              kHalfPingPongPixelCluster.filters == kHalfPingPong.filters &&
              kHalfPingPongPixelCluster.stages == kHalfPingPong.stages);
static_assert(kHalfPingPongRowTaps.row_store_staged_bytes() <= kHalfPingPongRowTaps.staged_bytes(),
              "a ping-pong row-tap consumer's staging holds its TMA store's boxes");
static_assert(std::none_of(std::begin(kWgmmaConfigs), std::begin(kWgmmaConfigs) + kRowTapConfigs,
                           [](const WgmmaConvConfig& c) {
                             return c.row_taps || c.cluster_pixels;
                           }) &&
                  std::all_of(std::begin(kWgmmaConfigs) + kRowTapConfigs,
                              std::begin(kWgmmaConfigs) + kPixelClusterConfigs,
                              [](const WgmmaConvConfig& c) {
                                return c.row_taps && c.cluster == 1 &&
                                       c.with_row_taps(3, 2).stages == c.stages;
                              }) &&
                  std::all_of(std::begin(kWgmmaConfigs) + kPixelClusterConfigs,
                              std::end(kWgmmaConfigs),
                              [](const WgmmaConvConfig& c) {
                                return c.cluster_pixels && c.cluster > 1 && !c.row_taps;
                              }),
              "the row-tap variants follow the others, without clusters, and their stages are as "
              "many as fit a 3 x 3 conv's; then the clusters that share their pixels");

TensorMapElement map_element(DataType dtype) {
  return dtype == DataType::f16 ? TensorMapElement::f16 : TensorMapElement::bf16;
}

// A dimension's byte stride for the map: its own, or, where the dimension
// has one element and is never stepped, the packed one after `inner`,
// since the view's stride for it may be anything.
std::uint64_t map_stride(std::int64_t dim, std::int64_t stride, std::uint64_t inner) {
  return dim == 1 ? inner : static_cast<std::uint64_t>(stride * kElementBytes);
}

// Where a map's anchors run along each axis (D, H, W): from `lower` to
// the tensor's far edge plus `upper`, `traversal` apart.
struct AnchorRange {
  std::array<std::int64_t, 3> lower{}, upper{}, traversal{1, 1, 1};
};

// The swizzle whose span is a box row of `channels` 16-bit elements (a K
// step's: 32, 64 or 128 bytes), the layout wgmma reads (step_swizzle in
// conv/wgmma_conv_tile.cuh).
TensorMapSwizzle row_swizzle(long long channels) {
  return row_span_swizzle(static_cast<std::size_t>(channels * kElementBytes));
}

// The channels-last tensor `t` as (C, W[, H[, D]], N) for im2col boxes
// of `pixels` pixels by `channels` channels, its anchors in `range`.
TensorMapSpec im2col_map(const OpDescriptor& d, const View5& t, const AnchorRange& range,
                         std::uint32_t pixels, long long channels) {
  TensorMapSpec s;
  s.mode = TensorMapMode::im2col;
  s.element = map_element(d.dtype);
  s.rank = static_cast<unsigned>(d.spatial_dims + 2);
  s.dims[0] = static_cast<std::uint64_t>(t.dims[1]);
  std::uint64_t inner = static_cast<std::uint64_t>(t.dims[1] * kElementBytes);
  for (unsigned i = 0; i + 2 < s.rank; ++i) {
    const std::size_t at = 2 - i;  // W, H, D in the window's (D, H, W) order
    s.dims[i + 1] = static_cast<std::uint64_t>(t.dims[at + 2]);
    s.strides[i] = map_stride(t.dims[at + 2], t.strides[at + 2], inner);
    inner = s.strides[i] * s.dims[i + 1];
    s.element_strides[i + 1] = static_cast<std::uint32_t>(range.traversal[at]);
    s.lower_corner[i] = static_cast<int>(range.lower[at]);
    s.upper_corner[i] = static_cast<int>(range.upper[at]);
  }
  s.dims[s.rank - 1] = static_cast<std::uint64_t>(t.dims[0]);
  s.strides[s.rank - 2] = map_stride(t.dims[0], t.strides[0], inner);
  s.channels_per_pixel = static_cast<std::uint32_t>(channels);
  s.pixels_per_column = pixels;
  s.swizzle = row_swizzle(channels);
  return s;
}

// The pixels a window row's taps reach past its first along W: with row
// taps (WgmmaConvConfig::row_taps), how much each output row's anchors
// are widened by and each consumer's box of A is taller.
long long row_reach(const OpDescriptor& d, const WgmmaConvConfig& config) {
  if (!config.row_taps) return 0;
  const Window3 win = canonical_window(d);
  return (win.size[2] - 1) * win.dilation[2];
}

// x, its anchors walking the output pixels: from -pad to the last output
// pixel's anchor, `stride` apart, each row's last anchor `reach` further
// (row taps).
TensorMapSpec window_map(const OpDescriptor& d, std::uint32_t pixels, long long channels,
                         long long reach = 0) {
  const View5 x = canonical_view(d.x_dims, d.x_strides, d.spatial_dims);
  const View5 y = canonical_view(d.y_dims, d.y_strides, d.spatial_dims);
  const Window3 win = canonical_window(d);
  AnchorRange range;
  for (std::size_t a = 0; a < 3; ++a) {
    range.lower[a] = -win.pad_begin[a];
    range.upper[a] = (y.dims[a + 2] - 1) * win.stride[a] - win.pad_begin[a] - (x.dims[a + 2] - 1);
    range.traversal[a] = win.stride[a];
  }
  range.upper[2] += reach;
  return im2col_map(d, x, range, pixels, channels);
}

// dy for a bwdfilt: its own pixels, so that a box is a K step's run of
// them (in N, D, H, W order, across rows and images) by 64 filters.
TensorMapSpec output_map(const OpDescriptor& d) {
  return im2col_map(d, canonical_view(d.y_dims, d.y_strides, d.spatial_dims), {},
                    WgmmaConvTile::kStepPixels, WgmmaConvTile::kChannels);
}

// dy for a strided bwddata: every phase's pixels from the phases' common
// origin, the widest phase's extent (conv_bwddata_wgmma.cuh).
TensorMapSpec phase_map(const OpDescriptor& d, const StridePhases& phases, std::uint32_t pixels,
                        long long channels) {
  const View5 dy = canonical_view(d.y_dims, d.y_strides, d.spatial_dims);
  AnchorRange range;
  for (std::size_t a = 0; a < 3; ++a) {
    range.lower[a] = phases.axis[a].origin;
    range.upper[a] = phases.axis[a].origin + phases.axis[a].extent - dy.dims[a + 2];
  }
  return im2col_map(d, dy, range, pixels, channels);
}

// w as (CG, S, R, T, K): a box of `channels` channels of one tap for
// `filters` filters; its own strides, or `packed`: the copy in K T R S CG
// order that the first pass writes into the workspace
// (conv/packed_filters.cuh).
TensorMapSpec filter_map(const OpDescriptor& d, bool packed, long long channels,
                         long long filters) {
  const View5 w = canonical_view(d.w_dims, d.w_strides, d.spatial_dims);
  TensorMapSpec s;
  s.element = map_element(d.dtype);
  s.rank = 5;
  s.dims = {static_cast<std::uint64_t>(w.dims[1]), static_cast<std::uint64_t>(w.dims[4]),
            static_cast<std::uint64_t>(w.dims[3]), static_cast<std::uint64_t>(w.dims[2]),
            static_cast<std::uint64_t>(w.dims[0])};
  const std::array<std::size_t, 4> order = {4, 3, 2, 0};  // S, R, T, K in the view
  std::uint64_t inner = static_cast<std::uint64_t>(w.dims[1] * kElementBytes);
  for (std::size_t i = 0; i < order.size(); ++i) {
    s.strides[i] = packed ? inner : map_stride(w.dims[order[i]], w.strides[order[i]], inner);
    inner = s.strides[i] * s.dims[i + 1];
  }
  s.box = {static_cast<std::uint32_t>(channels), 1, 1, 1, static_cast<std::uint32_t>(filters)};
  s.swizzle = row_swizzle(channels);
  return s;
}

// OK if TMA takes `spec` (at a 16-byte aligned address, as a launch
// checks it), else why not.
Status check_map(TensorMapSpec spec) {
  alignas(16) static const std::byte kAligned[16] = {};
  spec.global_address = kAligned;
  return validate_tensor_map(spec);
}

// A bwddata of a strided conv, which runs by stride phases
// (conv_bwddata_wgmma.cuh).
bool phased(const OpDescriptor& d) {
  return d.direction == Direction::bwddata && !d.has_unit_stride();
}

// The channels its GEMM reduces: a forward conv's C, a strided bwddata's K.
long long reduced_channels(const OpDescriptor& d) {
  const View5 w = canonical_view(d.w_dims, d.w_strides, d.spatial_dims);
  return phased(d) ? w.dims[0] : w.dims[1];
}

// Whether w's own layout has a TMA map of boxes of `filters` rows of
// `channels` channels: its channels contiguous (K R S C) and its strides
// 16-byte multiples.  LBANN's and PyTorch's default K C R S filters have
// none.
bool maps_in_place(const OpDescriptor& d, long long channels, long long filters) {
  const View5 w = canonical_view(d.w_dims, d.w_strides, d.spatial_dims);
  return w.strides[1] == 1 && check_map(filter_map(d, false, channels, filters)).is_ok();
}

// A bwddata reads its transposed filters (B's C rows of K channels) from
// w itself where w's channels are contiguous: a box of w is the K step's
// filters (B's K) by 64 channels (B's N), the MN-major layout that wgmma
// transposes (Problem::FILTERS_MN); a stride-1 one's taps flipped as the
// producer loads them.  Else (a 3 x 3's K C R S) from a packed copy.
bool filters_mn(const OpDescriptor& d) {
  return d.direction == Direction::bwddata &&
         maps_in_place(d, WgmmaConvTile::kChannels, wgmma_step_channels(d));
}

// Whether the kernel reads a packed copy of w: for a bwddata, whose
// filters it transposes (a stride-1 one's taps flipped), unless it reads
// w's MN-major boxes (filters_mn); else where w's own layout has no TMA
// map.  `e`: the forward conv.  A bwdfilt writes w with plain stores, and
// reads no filters.
bool packs_filters(const OpDescriptor& d, const OpDescriptor& e) {
  if (d.direction == Direction::bwdfilt) return false;
  if (d.direction == Direction::bwddata) return !filters_mn(d);
  return !maps_in_place(e, wgmma_step_channels(d), WgmmaConvTile::kFilters);
}

// Why a variant does not apply; wgmma_conv_support names the variant.
Status not_available(std::string_view why) { return Status::not_available(std::string(why)); }

// What the kernel reads through map 0 and walks along its channels.
std::string_view input_name(const OpDescriptor& d) {
  return d.direction == Direction::bwddata ? "dy" : "x";
}

// What a map reads or writes: map 0 the input, map 1 w (a bwdfilt: dy),
// map 2 the output.
std::string_view mapped_name(const OpDescriptor& d, const TensorMapArgument& map) {
  if (map.operand == TensorMapArgument::Operand::in0) return input_name(d);
  if (map.operand == TensorMapArgument::Operand::out)
    return d.direction == Direction::bwddata ? "dx" : "y";
  return d.direction == Direction::bwdfilt ? "dy" : "w";
}

// The input the kernel reads (x of `e`, the forward conv of `d`; a
// strided bwddata's dy) runs along its channels; a bwdfilt reads dy, too,
// along its filters.
Status check_channels_last(const OpDescriptor& d, const OpDescriptor& e) {
  const View5 x = phased(d) ? canonical_view(d.y_dims, d.y_strides, d.spatial_dims)
                            : canonical_view(e.x_dims, e.x_strides, e.spatial_dims);
  if (x.strides[1] != 1)
    return not_available(fmt::format(
        "reads {} with TMA along its channels: it needs channel stride 1 (channels-last)",
        input_name(d)));
  const View5 y = canonical_view(d.y_dims, d.y_strides, d.spatial_dims);
  if (d.direction == Direction::bwdfilt && y.strides[1] != 1)
    return not_available(
        "reads dy with TMA along its filters: it needs channel stride 1 (channels-last)");
  return Status::ok();
}

// The taps' im2col offsets, within what the map's rank encodes: the
// window's span, or the phases' reach from their common origin.
Status check_filter_offsets(const OpDescriptor& d) {
  const Window3 win = canonical_window(d);
  const std::int64_t limit = im2col_offset_limit(static_cast<unsigned>(d.spatial_dims + 2));
  if (phased(d)) {
    const StridePhases phases = stride_phases(d);
    for (const PhaseAxis& axis : phases.axis)
      if (axis.reach >= limit)
        return not_available(fmt::format(
            "reaches dy through im2col offsets below {} for a {}D conv; this conv's stride "
            "phases span {} pixels of dy",
            limit, d.spatial_dims, axis.reach + 1));
    return Status::ok();
  }
  for (std::size_t at = 0; at < 3; ++at)
    if ((win.size[at] - 1) * win.dilation[at] >= limit)
      return not_available(fmt::format(
          "reaches taps through im2col offsets below {} for a {}D conv; this filter spans {}",
          limit, d.spatial_dims, (win.size[at] - 1) * win.dilation[at] + 1));
  return Status::ok();
}

// Whether the first pass of a strided bwddata writes beta dx on the
// phases no tap lands on (conv_bwddata_wgmma.cuh's P::FILL_PHASES): where
// it has no filters to copy (filters_mn) and some phase has no taps.
bool fills_phases(const OpDescriptor& d) {
  if (!phased(d) || !filters_mn(d)) return false;
  const StridePhases phases = stride_phases(d);
  return phases.with_taps < phases.count;
}

// The phases a strided bwddata's tiles cover: those with taps where the
// first pass writes the others (fills_phases), else all.
long long tiled_phases(const OpDescriptor& d) {
  const StridePhases phases = stride_phases(d);
  return fills_phases(d) ? phases.with_taps : phases.count;
}

// The output tiles: fwd, of y, `config`'s pixels by its filters, the
// pixels' tiles in whole clusters (clusters that share their pixels: the
// filters' tiles, which support_rules makes whole clusters already); a
// strided bwddata's, of each phase of
// dx its tiles cover (tiled_phases), its pixels by its channels; bwdfilt,
// of dw, 128 filters by two blocks of 64 channels of a tap.
long long output_tiles(const OpDescriptor& d, const WgmmaConvConfig& config) {
  const long long filters = config.filters;
  if (phased(d)) {
    const StridePhases phases = stride_phases(d);
    const View5 dx = canonical_view(d.x_dims, d.x_strides, d.spatial_dims);
    long long pixels = dx.dims[0];
    for (const PhaseAxis& axis : phases.axis) pixels *= axis.extent;
    return tiled_phases(d) * ceil_div(pixels, config.pixels) * ceil_div(dx.dims[1], filters);
  }
  if (d.direction == Direction::bwdfilt) {
    const View5 w = canonical_view(d.w_dims, d.w_strides, d.spatial_dims);
    const long long channel_blocks = ceil_div(w.dims[1], WgmmaConvTile::kChannels);
    return ceil_div(w.dims[0], WgmmaConvTile::kFilters) *
           ceil_div(w.spatial_size() * channel_blocks, 2);
  }
  const View5 y = canonical_view(d.y_dims, d.y_strides, d.spatial_dims);
  const long long anchors = y.dims[0] * y.dims[2] * y.dims[3] * (y.dims[4] + row_reach(d, config));
  const long long pixel_cluster = config.cluster_pixels ? 1 : config.cluster;
  const long long pixel_tiles = ceil_div(anchors, config.pixels * pixel_cluster) * pixel_cluster;
  return pixel_tiles * ceil_div(y.dims[1], filters);
}

// The K steps of all the taps: blocks of the step's channels (a strided
// bwddata's: filters) at each tap.
long long reduction_steps(const OpDescriptor& d) {
  const View5 w = canonical_view(d.w_dims, d.w_strides, d.spatial_dims);
  return w.spatial_size() * ceil_div(reduced_channels(d), wgmma_step_channels(d));
}

// The K steps of an output tile of a fwd or stride-1 bwddata (taps x
// blocks of the step's channels), or of a strided bwddata's phase (taps x
// blocks of its filters), the mean of the phases its tiles cover: each
// phase takes its own taps.
long long tile_steps(const OpDescriptor& d) {
  const long long steps = reduction_steps(d);
  return phased(d) ? ceil_div(steps, tiled_phases(d)) : steps;
}

// The f32 partial sums a split reduction may take: the tiles' rule
// (kernel_variants.hpp's gemm_split).
constexpr long long kMaxPartialBytes = 64ll << 20;
// Whether a bwdfilt's clusters add its slices (CONVJIT_WGMMA_CLUSTER_SUMS;
// launch_cluster_slices).
bool cluster_sums() { return SettingsStore::instance().snapshot()->wgmma_cluster_sums.value; }

// The blocks of a grid that its busiest SM runs: the scheduler gives each
// SM a block before any a second.
long long busiest_sm_blocks(long long blocks) { return ceil_div(blocks, kHopperSms); }

// A bwdfilt's slices of the pixels (conv_bwdfilt_wgmma.cuh): of the counts
// that fill an H100's or H200's 132 SMs at most twice, give each slice at
// least 8 K steps (its pipeline's fill and its epilogue amortised), keep
// the f32 partial sums within 64 MiB, and come in whole clusters beyond a
// cluster's 8 (launch_cluster_slices), the fewest that leave the busiest
// SM the least of the pixels: busiest_sm_blocks(tiles x slices) / slices
// tiles' worth, compared exactly.  ResNet-50's layer4 1 x 1
// convs at batch 32 (64 tiles of 25 steps) take 2 slices, 128 blocks:
// sliced only where each slice kept 16 steps, they ran on 64 SMs.
long long pixel_slices(const OpDescriptor& d, long long tiles) {
  const View5 y = canonical_view(d.y_dims, d.y_strides, d.spatial_dims);
  const View5 w = canonical_view(d.w_dims, d.w_strides, d.spatial_dims);
  const long long steps = ceil_div(y.dims[0] * y.spatial_size(), WgmmaConvTile::kStepPixels);
  const long long weights = w.dims[0] * w.dims[1] * w.spatial_size();
  const long long by_memory =
      kMaxPartialBytes / (weights * static_cast<long long>(sizeof(float)));
  constexpr long long kMinSteps = 8;
  constexpr long long kCluster = CONVJIT_WGMMA_CLUSTER_SLICES;
  const long long most =
      std::max(1ll, std::min({2 * kHopperSms / tiles, steps / kMinSteps, by_memory}));
  const bool clusters = cluster_sums();
  long long best = 1;
  for (long long slices = 2; slices <= most; ++slices) {
    if (clusters && slices > kCluster && slices % kCluster != 0) continue;
    if (busiest_sm_blocks(tiles * slices) * best < busiest_sm_blocks(tiles * best) * slices)
      best = slices;
  }
  return best;
}

// A fwd's or bwddata's slices of the K steps (split-K): where its output
// tiles leave block slots idle (ResNet-50's 7 x 7 layers: 52 tiles for
// 264 slots), the most slices whose blocks still fit in one wave of
// `config`'s slots, each at least 32 K steps (16 where the tiles fill a
// quarter of the slots or less), their f32 partial sums (a tile each)
// within 64 MiB.  1 where the tiles fill a wave's half or more.  The
// analyser's H200 predictions (bench/results/2026-11-28-hopper-split-k):
// slices of 16 steps were slower than none for grids filling 0.39 of the
// slots (layer4's 1 x 1 convs of ResNet-50 at batch 32: the second pass
// and each slice's fill cost more than the wider grid saved), faster for
// grids filling 0.20.
long long reduction_slices(const OpDescriptor& d, long long tiles, const WgmmaConvConfig& config) {
  const long long slots = kHopperSms * config.blocks_per_sm;
  const long long min_steps = 4 * tiles <= slots ? 16 : 32;
  const long long tile_bytes =
      config.pixels * config.filters * static_cast<long long>(sizeof(float));
  return std::max(1ll, std::min({slots / tiles, tile_steps(d) / min_steps,
                                 kMaxPartialBytes / (tiles * tile_bytes)}));
}

// The K's slices (split-K): of the pixels for a bwdfilt, of the taps and
// channels for the others.
long long k_slices(const OpDescriptor& d, long long tiles, const WgmmaConvConfig& config) {
  if (config.ping_pong) return 1;  // a persistent grid is full wherever it has a tile an SM
  return d.direction == Direction::bwdfilt ? pixel_slices(d, tiles)
                                           : reduction_slices(d, tiles, config);
}

// The K steps of a tile of `config` (a fitted tile): with row taps, a
// window row's taps a step.
long long config_steps(const OpDescriptor& d, const WgmmaConvConfig& config) {
  return tile_steps(d) / config.taps;
}

// Stream-K's blocks (conv/wgmma_conv_tile.cuh; 0: none): a ping-pong grid
// without clusters over a forward conv's tiles, one block an SM, where
// whole tiles taken in turn would leave its last round under 0.9 full
// (ResNet-50's layer4 at batch 32: 104 tiles of 128 x 64 on 132 SMs) and
// each block still gets 4 K steps or more.  The blocks then share the
// tiles' K steps evenly, and the parts of a tile add up in the kernel.
long long stream_k_blocks(const OpDescriptor& d, const WgmmaConvConfig& config, long long tiles) {
  constexpr long long kMinBlockSteps = 4;
  if (!config.ping_pong || config.cluster > 1 || phased(d) || d.direction == Direction::bwdfilt)
    return 0;
  if (!SettingsStore::instance().snapshot()->wgmma_stream_k.value) return 0;
  const long long round = ceil_div(tiles, kHopperSms) * kHopperSms;
  if (10 * tiles > 9 * round || tiles * config_steps(d, config) < kMinBlockSteps * kHopperSms)
    return 0;
  return kHopperSms;
}

// The blocks of `config`'s main entry: a tile and slice each, or in
// ping-pong one an SM, each taking its tiles in turn, in whole clusters
// (the tiles are whole clusters too), or with Stream-K one an SM.
long long grid_blocks(const OpDescriptor& d, const WgmmaConvConfig& config) {
  const long long tiles = output_tiles(d, config);
  const long long slots = kHopperSms * config.blocks_per_sm / config.cluster * config.cluster;
  if (const long long blocks = stream_k_blocks(d, config, tiles); blocks > 0) return blocks;
  return config.ping_pong ? std::min(tiles, slots) : tiles * k_slices(d, tiles, config);
}

// A ping-pong block counts the K steps of all its tiles on its ring in an
// int: at most a tile's steps (a phase's at most all taps') times its
// tiles.
bool ring_steps_fit(const OpDescriptor& d, const WgmmaConvConfig& config) {
  if (!config.ping_pong) return true;
  const long long block_tiles = ceil_div(output_tiles(d, config), grid_blocks(d, config));
  return reduction_steps(d) * block_tiles <= std::numeric_limits<int>::max();
}

// Where the kernel stores y by TMA (Problem::TMA_STORE; such a kernel
// serves launches of beta 0 alone: check_output_beta), the map it stores
// through (wgmma_store_map.hpp): a forward conv's whole tiles (not
// split-K's partial sums, not Stream-K's) without a fused residual (read at y's
// offsets), where y's pixels are rows of one stride that TMA can map;
// with row taps, where the consumers' boxes fit the staging (a ping-pong
// consumer's own, else the ring); unless CONVJIT_WGMMA_TMA_STORE=0 keeps
// every tile on the threads' store.  `config`: the fitted tile.
std::optional<TensorMapSpec> tma_store_map(const OpDescriptor& d, const WgmmaConvConfig& config) {
  if (d.direction != Direction::fwd || d.has_residual()) return std::nullopt;
  if (!SettingsStore::instance().snapshot()->wgmma_tma_store.value) return std::nullopt;
  // Neither split-K's slices nor Stream-K's parts, which add up in the
  // staging that its threads then store.
  const long long tiles = output_tiles(d, config);
  if (k_slices(d, tiles, config) > 1 || stream_k_blocks(d, config, tiles) > 0) return std::nullopt;
  if (config.taps > 1 && config.row_store_staged_bytes() >
                             (config.ping_pong ? config.staged_bytes() : config.ring_bytes()))
    return std::nullopt;
  const View5 y = canonical_view(d.y_dims, d.y_strides, d.spatial_dims);
  const auto map = store_map(map_element(d.dtype), y,
                             std::min(config.filters, WgmmaConvTile::kFilters), config.reach);
  if (!map || !check_map(*map).is_ok()) return std::nullopt;
  return map;
}

// fwd and stride-1 bwddata: map 0 over x (dy); a strided bwddata: map 0
// over dy by phases; map 1 over w, its packed copy in the workspace, or a
// bwddata's w itself in MN-major boxes (filters_mn).  bwdfilt: map 0
// over x (where it folds its taps, x' in the workspace), map 1 over dy.
// `d`: the forward conv of `desc`; `config`'s tile sizes the boxes.
std::vector<TensorMapArgument> input_maps(const OpDescriptor& desc, const OpDescriptor& d,
                                          const WgmmaConvConfig& config) {
  using Operand = TensorMapArgument::Operand;
  const long long filters = config.filters;
  const auto pixels = static_cast<std::uint32_t>(config.pixels);
  if (d.direction == Direction::bwdfilt)
    return {{window_map(d, WgmmaConvTile::kStepPixels, WgmmaConvTile::kChannels),
             folds_taps(desc) ? Operand::workspace : Operand::in0, 0},
            {output_map(d), Operand::in1, 0}};
  const long long step = wgmma_step_channels(desc);
  // A box a tile, or with row taps a consumer's 128 anchors and their reach.
  const long long reach = row_reach(d, config);
  const auto a_box =
      static_cast<std::uint32_t>(reach > 0 ? WgmmaConvTile::kPixels + reach : config.pixels);
  if (folds_taps(desc))  // x' and w', which the first pass writes (tap_fold.hpp)
    return {{window_map(d, pixels, step), Operand::workspace, 0},
            {filter_map(d, true, step, filters), Operand::workspace,
             tap_fold_layout(desc).filters_offset}};
  const TensorMapArgument in0 =
      phased(d) ? TensorMapArgument{phase_map(d, stride_phases(d), pixels, step), Operand::in0, 0}
                : TensorMapArgument{window_map(d, a_box, step, reach), Operand::in0, 0};
  if (filters_mn(desc))
    return {in0, {filter_map(desc, false, WgmmaConvTile::kChannels, step), Operand::in1, 0}};
  if (phased(d))
    return {in0, {filter_map(transposed_filters(d), true, step, filters), Operand::workspace, 0}};
  const bool packed = packs_filters(desc, d);
  return {in0,
          {filter_map(d, packed, step, filters), packed ? Operand::workspace : Operand::in1, 0}};
}

// The maps the kernel reads (input_maps), then, where it stores y by TMA,
// map 2 over y (tma_store_map).
std::vector<TensorMapArgument> tensor_maps(const OpDescriptor& desc, const OpDescriptor& d,
                                           const WgmmaConvConfig& config) {
  std::vector<TensorMapArgument> maps = input_maps(desc, d, config);
  if (const auto store = tma_store_map(d, config))
    maps.push_back({*store, TensorMapArgument::Operand::out, 0});
  return maps;
}

// `config` fitted to a conv of row taps: S taps a stage reaching (S - 1)
// DW, as many stages as fit (WgmmaConvConfig::with_row_taps).
WgmmaConvConfig row_tap_config(const OpDescriptor& d, const WgmmaConvConfig& config) {
  return config.with_row_taps(canonical_window(d).size[2], row_reach(d, config));
}

// The row-tap variants' own rules (`d`: the forward conv of `desc`): a
// forward conv (a fwd, or a stride-1 bwddata as one) whose taps are its
// own (not folded), several along W at stride 1, in K steps of 64
// channels (the 128-byte swizzle, whose patterns the taps' descriptors
// start inside: the narrower ones are untried on a GPU), and two stages
// of its row's filters or more in shared memory.
Status check_row_taps(const OpDescriptor& desc, const OpDescriptor& d,
                      const WgmmaConvConfig& config) {
  if (!config.row_taps) return Status::ok();
  const std::string_view plain = config.id.substr(0, config.id.size() - 1);
  if (desc.direction == Direction::bwdfilt)
    return not_available(fmt::format(
        "takes a window row's taps from one box of a forward conv's input; use {} for a bwdfilt",
        kWgmmaVariant));
  if (phased(desc) || folds_taps(desc))
    return not_available(fmt::format(
        "takes a window row's taps from one box of the conv's own input; this {}: use {}",
        phased(desc) ? "strided bwddata runs by stride phases" : "conv folds its taps", plain));
  const Window3 win = canonical_window(d);
  if (win.size[2] == 1 || win.stride[2] != 1)
    return not_available(fmt::format(
        "takes a window row's taps from one box at stride 1 along W; this conv has {} tap(s) "
        "along W at stride {}: use {}",
        win.size[2], win.stride[2], plain));
  if (const long long step = wgmma_step_channels(desc); step != WgmmaConvTile::kChannels)
    return not_available(fmt::format(
        "takes a window row's taps in K steps of {} channels; this conv reduces {} a step: use {}",
        WgmmaConvTile::kChannels, step, plain));
  if (const WgmmaConvConfig fitted = row_tap_config(d, config); fitted.stages < 2)
    return not_available(fmt::format(
        "holds a stage's {} taps of filters in shared memory, room for {} stage(s) of {} bytes, "
        "under 2: use {}",
        fitted.taps, fitted.stages, fitted.stage_bytes(WgmmaConvTile::kChannels), plain));
  return Status::ok();
}

// The channels the tiles' N covers: y's, a bwddata's dx's.
long long output_channels(const OpDescriptor& desc) {
  return desc.direction == Direction::bwddata ? desc.x_dims[1] : desc.y_dims[1];
}

// A cluster that shares its pixel tile takes as many neighbouring filter
// tiles: the output's channels must make whole clusters of them, so that
// every block of a cluster has a tile of its own.
Status check_pixel_cluster(const OpDescriptor& desc, const WgmmaConvConfig& config) {
  if (!config.cluster_pixels) return Status::ok();
  const long long channels = output_channels(desc), filters = config.filters;
  if (ceil_div(channels, filters) % config.cluster == 0) return Status::ok();
  return not_available(fmt::format(
      "runs clusters of {} blocks over neighbouring tiles of {} filters of one pixel tile; this "
      "conv's {} output channels make {} such tiles, not whole clusters: use {}",
      config.cluster, filters, channels, ceil_div(channels, filters),
      filters == kHalfPingPong.filters ? kHalfPingPong.id : kPingPong.id));
}

Status support_rules(const OpDescriptor& desc, const WgmmaConvConfig& config) {
  if (desc.kind != OpKind::conv) return not_available("serves convs only");
  if (desc.direction == Direction::bwdfilt &&
      (config.filters != WgmmaConvTile::kFilters || config.pixels != WgmmaConvTile::kPixels ||
       config.ping_pong))
    return not_available(fmt::format(
        "tiles the output {} x {}{}; a bwdfilt's tile is {} filters by {} channels, a block's "
        "own: use {}",
        config.pixels, config.filters, config.ping_pong ? " in ping-pong" : "",
        WgmmaConvTile::kFilters, 2 * WgmmaConvTile::kChannels, kWgmmaVariant));
  if (config.cluster > 1 && phased(desc))
    return not_available(fmt::format(
        "runs clusters of {} blocks over neighbouring tiles of one conv; a strided bwddata's "
        "tiles are its stride phases': use {}",
        config.cluster, kPingPong.id));
  if (Status s = tap_fold_fits(desc); !s.is_ok()) return s;
  if (Status s = check_pixel_cluster(desc, config); !s.is_ok()) return s;
  const OpDescriptor d = wgmma_forward_equivalent(desc);
  if (d.dtype != DataType::f16 && d.dtype != DataType::bf16)
    return not_available(fmt::format("runs f16 and bf16 on wgmma; this op is {}",
                                     dtype_name(d.dtype)));
  if (d.groups != 1) return not_available("serves one group");
  if (Status s = check_channels_last(desc, d); !s.is_ok()) return s;
  const Window3 win = canonical_window(d);
  for (std::int64_t stride : win.stride)
    if (!phased(d) && stride > kMaxTraversalStride)
      return not_available(fmt::format("walks the pixels with TMA's traversal stride, at most "
                                       "{}; this conv's stride is {}",
                                       kMaxTraversalStride, stride));
  if (Status s = check_filter_offsets(d); !s.is_ok()) return s;
  if (Status s = check_row_taps(desc, d, config); !s.is_ok()) return s;
  constexpr long long kMaxGrid = 0x7fffffff;  // gridDim.x
  if (const long long blocks = grid_blocks(d, config); blocks > kMaxGrid)
    return not_available(
        fmt::format("would launch {} blocks, beyond the grid's {}", blocks, kMaxGrid));
  if (!ring_steps_fit(d, config))
    return not_available(fmt::format(
        "would count more than {} K steps on a block's ring; use a variant of a block a tile",
        std::numeric_limits<int>::max()));
  // The rest is TMA's own rules (strides, corners, boxes), checked as a
  // launch will check them.
  for (const TensorMapArgument& map : tensor_maps(desc, d, config))
    if (Status s = check_map(map.spec); !s.is_ok())
      return not_available(
          fmt::format("cannot map {} with TMA: {}", mapped_name(desc, map), s.message()));
  return Status::ok();
}

// The share of the block slots `config`'s tiles for `d` fill, over their
// waves: a block a tile, as the H200 timed them (before split-K).
double wave_fill(const OpDescriptor& d, const WgmmaConvConfig& config) {
  const long long blocks = output_tiles(d, config);
  const long long slots = kHopperSms * config.blocks_per_sm;
  return static_cast<double>(blocks) / static_cast<double>(ceil_div(blocks, slots) * slots);
}

// The SMs `config`'s blocks (its tiles, times their K slices) keep busy
// in their first wave: the scheduler gives each SM one block before any a
// second.
long long busy_sms(const OpDescriptor& d, const WgmmaConvConfig& config) {
  const long long tiles = output_tiles(d, config);
  return std::min(tiles * k_slices(d, tiles, config), kHopperSms);
}

// Whether the 128 x 64 tile pads the output's channels less than a
// 128-filter tile: 64 or fewer, 129 to 192, ...
bool half_tile_pads_less(const OpDescriptor& desc) {
  const long long channels = output_channels(desc);
  return ceil_div(channels, kHalfTile.filters) * kHalfTile.filters <
         ceil_div(channels, kTwoBlocks.filters) * kTwoBlocks.filters;
}

// The tile `config` runs for `desc` (`d`: its forward conv): its own, a
// row-tap tile's fitted to the conv's taps along W (row_tap_config), but
// a 64-filter tile's N 32 where the output has 32 channels or fewer
// (YOLO11n's convs of 16 or 32 filters): half the wgmmas a step, and half
// the tile its epilogue stages, of which at most half is then padding.
// Not where B is a bwddata's w in place, whose MN-major boxes are 64 of
// its channels.
WgmmaConvConfig fitted_tile(const OpDescriptor& desc, const OpDescriptor& d,
                            const WgmmaConvConfig& config) {
  constexpr long long kNarrowFilters = 32;
  WgmmaConvConfig fitted = config.row_taps ? row_tap_config(d, config) : config;
  if (config.filters == kHalfTile.filters && output_channels(desc) <= kNarrowFilters &&
      !filters_mn(desc))
    fitted.filters = kNarrowFilters;
  return fitted;
}

}  // namespace

OpDescriptor wgmma_forward_equivalent(const OpDescriptor& d) {
  if (folds_taps(d)) return folded_conv(d);
  return unit_stride_bwddata(d) ? bwddata_as_forward(d) : d;
}

long long wgmma_step_channels(const OpDescriptor& desc) {
  if (desc.direction == Direction::bwdfilt) return WgmmaConvTile::kChannels;
  const long long reduced = reduced_channels(wgmma_forward_equivalent(desc));
  for (const long long step : {16ll, 32ll})
    if (reduced <= step) return step;
  return WgmmaConvTile::kChannels;
}

Status wgmma_conv_support(const OpDescriptor& desc, const WgmmaConvConfig& config) {
  const Status s = support_rules(desc, config);
  if (s.is_ok()) return s;
  return Status::not_available(fmt::format("variant {} {}", config.id, s.message()));
}

const WgmmaConvConfig& wgmma_one_consumer_config(const OpDescriptor& desc) {
  // Between the measured 1.0 (equal fills, where the wider tile won) and
  // 1.33 (the fewest better fills where the half tile won).
  constexpr double kFullerWaves = 1.2;
  if (desc.direction == Direction::bwdfilt || !wgmma_conv_support(desc, kHalfTile).is_ok())
    return kTwoBlocks;
  if (half_tile_pads_less(desc)) return kHalfTile;
  const OpDescriptor d = wgmma_forward_equivalent(desc);
  const bool fuller = wave_fill(d, kHalfTile) > kFullerWaves * wave_fill(d, kTwoBlocks);
  return fuller ? kHalfTile : kTwoBlocks;
}

const WgmmaConvConfig& wgmma_tile_a_block_config(const OpDescriptor& desc) {
  const WgmmaConvConfig& one_consumer = wgmma_one_consumer_config(desc);
  if (desc.direction == Direction::bwdfilt) return one_consumer;
  // The tiles of two consumers as the analyser predicted them, a block's
  // epilogue charged for all its 256 rows
  // (bench/results/2026-11-28-hopper-wide-tile).  They halve the filters'
  // traffic a FLOP in the main loop but keep one block an SM, so they pay
  // where the main loop is long: under 8 K steps (ResNet-50's 1 x 1 convs
  // of 64 to 256 channels) 256 x 128 was 1.05-1.18x the one-consumer
  // tile's time, over 8 0.90-0.97x.  Beyond that, 256 x 128 needs its
  // blocks to keep two thirds as many SMs busy (0.9-1.0x where they did,
  // 1.1-1.5x where they kept half as many), and 256 x 64 follows the
  // 128 x 64 tile (0.88-1.00x where that one led, its tiles never fewer
  // than half the 128 x 64 tile's).
  constexpr long long kWideMinSteps = 8;
  const OpDescriptor d = wgmma_forward_equivalent(desc);
  if (tile_steps(d) < kWideMinSteps) return one_consumer;
  if (!half_tile_pads_less(desc) && wgmma_conv_support(desc, kWideTile).is_ok() &&
      3 * busy_sms(d, kWideTile) >= 2 * busy_sms(d, one_consumer))
    return kWideTile;
  const bool half = one_consumer.filters == kHalfTile.filters;
  return half && wgmma_conv_support(desc, kWideHalfTile).is_ok() ? kWideHalfTile : one_consumer;
}

namespace {

// 256 x 64, two consumers over 128 x 64 each, where the K step is the
// narrowest (16 channels) at stride 1, or the conv folds its taps: on
// the H200 it took 0.77-0.92x the time of 128 x 64 in ping-pong, the lead
// before, on all 4 such layers of YOLO11n (fwd and bwddata) and 0.85x on
// ResNet-50's folded stem; with stride 2 (YOLO11n's b1.conv: 1.08x fwd,
// a phased bwddata 1.23x) and a 32-channel step (0.96-0.98x) it did not
// win (bench/results/2026-12-04-h200).
bool leads_with_wide_half_tile(const OpDescriptor& desc) {
  constexpr long long kNarrowestStep = 16;
  if (!wgmma_conv_support(desc, kWideHalfTile).is_ok()) return false;
  if (folds_taps(desc)) return true;
  return desc.has_unit_stride() && wgmma_step_channels(desc) == kNarrowestStep;
}

}  // namespace

const WgmmaConvConfig& wgmma_tap_step_lead_config(const OpDescriptor& desc) {
  const WgmmaConvConfig& tile_a_block = wgmma_tile_a_block_config(desc);
  if (desc.direction == Direction::bwdfilt) return tile_a_block;
  // The analyser's H200 predictions (bench/results/2026-11-29-hopper-ping-pong,
  // whose rules.py weighed these thresholds): where a block takes several
  // tiles the ping-pong tiles hide an SM's epilogues under its other
  // consumer's main loops, and no round of blocks waits for its slowest.
  // Two exceptions keep the tiles of a block a tile:
  //  - a two-consumer tile over 16 K steps or more with a 128 x 128 tile
  //    an SM or more, whose main loop the L2 bounds and its shared filters
  //    shorten (CosmoFlow's conv2 and conv3: 0.74-0.93x the faster
  //    ping-pong tile's time, but 1.02x in conv3 fwd);
  //  - 64 K steps or more over tiles that keep at most half the SMs busy
  //    even at 128 x 64, whose slices (split-K) outrun a ping-pong block's
  //    one tile (ResNet-50's layer4 3 x 3 at batch 4: 0.92x).
  constexpr long long kWideMinSteps = 16, kSlicedMinSteps = 64;
  if (leads_with_wide_half_tile(desc)) return kWideHalfTile;
  const OpDescriptor d = wgmma_forward_equivalent(desc);
  const long long steps = tile_steps(d), full_tiles = output_tiles(d, kPingPong),
                  half_tiles = output_tiles(d, kHalfPingPong);
  if (tile_a_block.consumers() == 2 && steps >= kWideMinSteps && full_tiles >= kHopperSms)
    return tile_a_block;
  if (2 * half_tiles <= kHopperSms && steps >= kSlicedMinSteps) return tile_a_block;
  // The 128 x 64 tile where it pads less, and where its tiles stay one an
  // SM: the same work on twice the SMs.  Not for a short reduction (4 K
  // steps or fewer, as the analyser had it): on the H200 128 x 128 was
  // 0.85-0.87x its time on ResNet-50's 1 x 1 convs of 64 and 128 channels.
  const bool half = half_tile_pads_less(desc) || half_tiles <= kHopperSms;
  const WgmmaConvConfig& ping_pong = half ? kHalfPingPong : kPingPong;
  return wgmma_conv_support(desc, ping_pong).is_ok() ? ping_pong : tile_a_block;
}

namespace {

// The tile work (pixels x filters) the busiest SM does: its share of
// `config`'s blocks (a tile and slice each, or its ping-pong tiles; one
// block an SM) times a block's share of a tile, or with Stream-K its
// share of the tiles' K steps.
long long busiest_sm_work(const OpDescriptor& d, const WgmmaConvConfig& config) {
  const long long tiles = output_tiles(d, config), slices = k_slices(d, tiles, config);
  const long long area = config.pixels * config.filters;
  if (stream_k_blocks(d, config, tiles) > 0) {
    const long long steps = config_steps(d, config);
    return ceil_div(tiles * steps, kHopperSms) * area / steps;
  }
  return busiest_sm_blocks(tiles * slices) * area / slices;
}

// The row-tap tile in place of `lead` (a ping-pong tile, or 256 x 64):
// of 256 x 64 and 128 x 64 in ping-pong, the one that serves the conv
// with the less tile work on the busiest SM, where that adds under a
// quarter to the lead's.  At equal work 256 x 64, whose two consumers
// share each stage's filters, from half the tiles' fills, unless it
// slices the K (split-K's second pass).  The analyser's predictions
// (bench/results/2026-12-06-row-taps): 0.67-0.88x the lead's time on the
// 3 x 3 convs of ResNet-50 and YOLO11n where it led, fwd and bwddata
// (ResNet-50's layer3.conv2 in 256 x 64 0.84x, in 128 x 64 0.95x; its
// layer4.conv2, whose 256 x 64 tiles slice, 0.91x and 0.77x); where the
// widened rows took an SM a wave more of tiles it lost (CosmoFlow's
// conv5 fwd at 128 x 64: 1.73x, 2 waves for 1), and it did not pay where
// 256 x 128 leads (1.00-1.93x).  Never the row-tap tiles of 128
// filters, which led nowhere.
const WgmmaConvConfig& row_tap_lead(const OpDescriptor& desc, const WgmmaConvConfig& lead) {
  if (!lead.ping_pong && lead.id != kWideHalfTile.id) return lead;
  const OpDescriptor d = wgmma_forward_equivalent(desc);
  const auto sliced = [&](const WgmmaConvConfig& c) {
    return k_slices(d, output_tiles(d, c), c) > 1;
  };
  const WgmmaConvConfig* best = nullptr;
  long long least = 0;
  for (const WgmmaConvConfig* row_taps : {&kWideHalfRowTaps, &kHalfPingPongRowTaps}) {
    if (!wgmma_conv_support(desc, *row_taps).is_ok()) continue;
    const long long work = busiest_sm_work(d, *row_taps);
    if (best == nullptr || work < least || (work == least && sliced(*best))) {
      best = row_taps;
      least = work;
    }
  }
  return best != nullptr && 4 * least < 5 * busiest_sm_work(d, lead) ? *best : lead;
}

// 128 x 64 in ping-pong in clusters of four that share their pixel tile
// (wgmma128x64pa) in place of a ping-pong tile without row taps whose
// tiles read each pixel tile's A 4 times or more (its output channels
// make 4 filter tiles or more): the L2 then brings A once a cluster, and
// the busiest SM's tile work is the lead's or less (twice 128 x 128's
// tiles take at most twice its rounds, of half the work).  The analyser's
// predictions (bench/results/2026-12-07-pixel-clusters): 0.58-0.98x the
// lead's time on the 7 convs of ResNet-50 fwd it changed (layer4.conv1
// 0.58x, layer4.0.conv2 0.69x, layer4.conv3 0.75x, whose L2 bounded
// them); with fewer filter tiles it saved too little for the 64-filter
// wgmmas' lower rate on 3 x 3 convs (layer3.0.conv2 1.18x).  Not yet
// timed on a GPU.
const WgmmaConvConfig& pixel_cluster_lead(const OpDescriptor& desc, const WgmmaConvConfig& lead) {
  constexpr long long kMinRereads = 4;
  if (lead.id != kPingPong.id && lead.id != kHalfPingPong.id) return lead;
  const bool rereads = ceil_div(output_channels(desc), lead.filters) >= kMinRereads;
  return rereads && wgmma_conv_support(desc, kHalfPingPongPixelCluster).is_ok()
             ? kHalfPingPongPixelCluster
             : lead;
}

}  // namespace

const WgmmaConvConfig& wgmma_lead_config(const OpDescriptor& desc) {
  return pixel_cluster_lead(desc, row_tap_lead(desc, wgmma_tap_step_lead_config(desc)));
}

static_assert(std::all_of(std::begin(kWgmmaConfigs), std::end(kWgmmaConfigs),
                          [](const WgmmaConvConfig& c) {
                            return c.stages <= CONVJIT_WGMMA_MAX_STAGES;
                          }),
              "the template declares the ring's mbarriers");
static_assert(std::all_of(std::begin(kWgmmaConfigs), std::end(kWgmmaConfigs),
                          [](const WgmmaConvConfig& table) {
                            const WgmmaConvConfig c =
                                table.row_taps ? table.with_row_taps(3, 2) : table;
                            return c.pixels % WgmmaConvTile::kPixels == 0 &&
                                   c.shared_bytes(16) <= kOptInSharedLimit &&
                                   c.shared_bytes(32) <= kOptInSharedLimit &&
                                   c.shared_bytes() <= kOptInSharedLimit &&
                                   (c.ping_pong || c.ring_bytes() >= c.staged_bytes());
                          }),
              "a tile is 128 pixels a consumer, its shared memory fits at every K step, and but "
              "in ping-pong its ring at the widest step holds what its epilogue stages: the f32 "
              "tile and its rows' offsets in y (with row taps, a 3 x 3 conv's; a narrower "
              "filter's ring may be the smaller, and the block's shared memory is the larger)");
static_assert(std::all_of(std::begin(kWgmmaConfigs), std::end(kWgmmaConfigs),
                          [](const WgmmaConvConfig& c) {
                            return !c.ping_pong ||
                                   (c.pixels == WgmmaConvTile::kPixels &&
                                    c.filters <= WgmmaConvTile::kFilters && c.blocks_per_sm == 1);
                          }),
              "a ping-pong block is one an SM, its consumers' tiles 128 pixels by 128 filters at "
              "most each");
static_assert(std::all_of(std::begin(kWgmmaConfigs), std::end(kWgmmaConfigs),
                          [](const WgmmaConvConfig& c) {
                            return c.consumers() <= 2 && (c.filters <= WgmmaConvTile::kFilters ||
                                                          c.filters % WgmmaConvTile::kFilters == 0);
                          }),
              "a block has one or two consumer warpgroups, of 128 filters each along a tile's "
              "filters beyond 128");
static_assert(std::all_of(std::begin(kWgmmaConfigs), std::end(kWgmmaConfigs),
                          [](const WgmmaConvConfig& c) {
                            return c.cluster == 1 || (c.ping_pong && kHopperSms % c.cluster == 0);
                          }),
              "clusters run persistent ping-pong blocks, and whole clusters fill the SMs");

const WgmmaConvConfig* find_wgmma_config(std::string_view variant) {
  for (const WgmmaConvConfig& c : kWgmmaConfigs)
    if (c.id == variant) return &c;
  return nullptr;
}

namespace {

// Stream-K's workspace after the filters' copy: each block's two slots of
// a consumer's f32 sums, then a counter a tile, which every launch finds
// zero and leaves so (KernelSource::zeroed_bytes).
void add_stream_k_sums(WgmmaConvLaunch& launch, long long tiles, const WgmmaConvConfig& config) {
  constexpr std::size_t kAlignment = 256;
  const std::size_t at = (launch.workspace_bytes + kAlignment - 1) / kAlignment * kAlignment;
  launch.partials_offset = static_cast<long long>(at / sizeof(float));
  const long long slots = 2 * launch.stream_k * WgmmaConvTile::kPixels * config.filters;
  launch.zeroed_offset = at + static_cast<std::size_t>(slots) * sizeof(float);
  launch.zeroed_bytes = static_cast<std::size_t>(tiles) * sizeof(float);
  launch.workspace_bytes = launch.zeroed_offset + launch.zeroed_bytes;
}

// Whether a bwdfilt's dw has its channels apart (K C R S with more than
// one tap), which a tile's block then stores as an f32 partial sum for the
// second pass to lay out along the taps (conv_bwdfilt_wgmma.cuh's
// scatters_dw).  The H200 took ResNet-50's layer4 3 x 3 bwdfilt, its
// tiles' threads storing K C R S dw themselves (32 sectors a warp's
// store), in 49-50 us, twice the model's time without those stores.  A
// cluster's blocks store their shares of a tile themselves: the model has
// that a little faster than the second pass
// (bench/results/2026-12-08-kcrs-dw).
bool scatters_dw(const View5& w) { return w.dims[1] > 1 && w.strides[1] != 1; }

// The slices a bwdfilt's clusters add (conv_bwdfilt_wgmma.cuh's
// sum_in_cluster): all of a tile's where they are 2 to 8, else 8 (whole
// clusters: pixel_slices); 0 for none: one slice, a conv that folds its
// taps (its second pass unfolds dw' too), or CONVJIT_WGMMA_CLUSTER_SUMS=0.
// The slices' f32 sums then stay in the cluster's shared memory, 64 KiB a
// block, where the second pass wrote and read them all through the L2
// and DRAM, and took a launch of its own; beyond 8 slices, it adds the
// clusters' sums, an eighth of the traffic.
long long launch_cluster_slices(const OpDescriptor& d, const WgmmaConvLaunch& launch) {
  if (d.direction != Direction::bwdfilt || launch.folded || launch.split == 1 || !cluster_sums())
    return 0;
  return std::min<long long>(launch.split, CONVJIT_WGMMA_CLUSTER_SLICES);
}

}  // namespace

WgmmaConvLaunch wgmma_conv_launch(const OpDescriptor& desc, const WgmmaConvConfig& variant) {
  const OpDescriptor d = wgmma_forward_equivalent(desc);
  const WgmmaConvConfig config = fitted_tile(desc, d, variant);
  const long long tiles = output_tiles(d, config);
  const bool packed = packs_filters(desc, d);
  const View5 w = canonical_view(d.w_dims, d.w_strides, d.spatial_dims);
  const long long weights = w.dims[0] * w.dims[1] * w.spatial_size();
  WgmmaConvLaunch launch;
  launch.packed = packed;
  if (folds_taps(desc)) {
    const TapFoldLayout fold = tap_fold_layout(desc);
    launch.entries.push_back({"convjit_kernel_prepare", fold.first_pass_items});
    launch.workspace_bytes = fold.workspace_bytes;
    launch.fold_filters_offset = static_cast<long long>(fold.filters_offset) / kElementBytes;
    launch.folded = true;
  } else if (packed) {
    // The forward equivalent's filters in the forward order; a strided
    // bwddata's in the backward-data order.
    launch.entries.push_back(filter_copy_entry(
        w, phased(d) ? FilterCopyOrder::backward_data : FilterCopyOrder::forward, 1, d.dtype));
    launch.workspace_bytes = static_cast<std::size_t>(weights * kElementBytes);
  } else if (fills_phases(desc)) {
    // A chunk of 8 of a dx pixel's channels a work item.
    const View5 dx = canonical_view(d.x_dims, d.x_strides, d.spatial_dims);
    const long long chunks =
        dx.dims[0] * dx.spatial_size() * ceil_div(dx.dims[1], 16 / kElementBytes);
    launch.entries.push_back({"convjit_kernel_prepare", std::min(chunks, kWaveThreads)});
    launch.fills_phases = true;
  }
  launch.split = k_slices(d, tiles, config);
  launch.stream_k = stream_k_blocks(d, config, tiles);
  launch.cluster_slices = launch_cluster_slices(d, launch);
  const long long blocks = grid_blocks(d, config);
  const long long step = wgmma_step_channels(desc);
  KernelEntry main{"convjit_kernel", blocks * config.threads(), blocks, config.shared_bytes(step),
                   static_cast<unsigned>(config.threads())};
  if (config.ping_pong) main.persistent_tiles = tiles;
  main.cluster_blocks =
      static_cast<unsigned>(launch.cluster_slices > 0 ? launch.cluster_slices : config.cluster);
  if (launch.stream_k > 0) {
    main.persistent_units = tiles * config_steps(d, config);
    add_stream_k_sums(launch, tiles, config);
  }
  launch.entries.push_back(std::move(main));
  if (d.direction == Direction::bwdfilt) {
    // The partial sums (a slice's, or a cluster's), after x' where the
    // conv folds its taps; the second pass adds them (and unfolds dw', or
    // lays dw out along its taps).
    const long long partials = launch.split / std::max(1ll, launch.cluster_slices);
    if (partials > 1 || launch.folded || (scatters_dw(w) && launch.cluster_slices == 0)) {
      launch.partial_sums = partials;
      launch.partials_offset = static_cast<long long>(launch.workspace_bytes / sizeof(float));
      launch.entries.push_back({"convjit_kernel_finish", std::min(weights, kWaveThreads)});
      launch.workspace_bytes += static_cast<std::size_t>(weights * partials) * sizeof(float);
    }
  } else if (launch.split > 1) {
    // The partial sums, a tile's per block, after the filters' copy.
    constexpr std::size_t kAlignment = 256;
    const std::size_t at = (launch.workspace_bytes + kAlignment - 1) / kAlignment * kAlignment;
    launch.partials_offset = static_cast<long long>(at / sizeof(float));
    // A thread per 16-byte chunk of a tile's y (kChunkElements), so that
    // the pass runs over the GPU, not a block a tile.
    constexpr long long kChunk = 16 / kElementBytes;
    const long long finish_blocks =
        tiles * config.pixels * config.filters / kChunk / kJitThreadsPerBlock;
    launch.entries.push_back(
        {"convjit_kernel_finish", finish_blocks * kJitThreadsPerBlock, finish_blocks});
    launch.workspace_bytes =
        at + static_cast<std::size_t>(blocks * config.pixels * config.filters) * sizeof(float);
  }
  launch.maps = tensor_maps(desc, d, config);
  launch.filters_mn = filters_mn(desc);
  launch.rank = d.spatial_dims + 2;
  launch.stages = config.stages_at(step);
  launch.step = step;
  launch.filters = config.filters;
  launch.consumers = config.consumers();
  launch.ping_pong = config.ping_pong;
  launch.cluster = config.cluster;
  launch.cluster_pixels = config.cluster_pixels;
  launch.row_taps = config.taps;
  launch.tma_store = stores_output_by_tma(launch.maps);
  launch.blocks_per_sm = config.blocks_per_sm;
  launch.flip = desc.direction == Direction::bwddata && !phased(desc);
  if (phased(d)) {
    const StridePhases phases = stride_phases(d);
    for (std::size_t a = 0; a < 3; ++a) launch.origin[a] = phases.axis[a].origin;
  }
  return launch;
}

}  // namespace convjit
