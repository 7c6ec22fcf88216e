#include "dispatcher/backends/jit/pixel_filters.hpp"

#include <fmt/format.h>

#include <numeric>
#include <utility>

#include "dispatcher/backends/jit/bwddata_as_forward.hpp"
#include "dispatcher/backends/jit/ceil_div.hpp"
#include "dispatcher/backends/jit/kernel_source.hpp"
#include "dispatcher/descriptor/canonical_layout.hpp"
#include "kernel_templates/conv/pixel_filters_shape.cuh"

namespace convjit {

bool pixel_filters_phased(const OpDescriptor& d) {
  return d.kind == OpKind::conv && d.direction == Direction::bwddata && !unit_stride_bwddata(d);
}

namespace {

constexpr long long kRows = CONVJIT_PIXELS_TILE_ROWS, kCols = CONVJIT_PIXELS_TILE_COLS;
constexpr long long kTapFilters = CONVJIT_PIXELS_TAP_ALIGNMENT;
static_assert(kRows * kCols / CONVJIT_PIXELS_STRIP == kJitThreadsPerBlock,
              "a thread per strip of the tile");

View5 filter_view(const OpDescriptor& d) {
  return canonical_view(d.w_dims, d.w_strides, d.spatial_dims);
}

// The filters as the kernel stages them: C x taps x K rounded up to whole reads.
long long staged_weights(const View5& w) {
  return w.dims[1] * w.spatial_size() * ceil_div(w.dims[0], kTapFilters) * kTapFilters;
}

// The conv the kernel runs for a descriptor, and its window, and whether
// it runs that window's stride phases.
struct KernelProblem {
  OpDescriptor conv;
  Window3 window;
  bool phases;
};
KernelProblem problem_of(const OpDescriptor& d) {
  OpDescriptor conv = pixel_filters_problem(d);
  const Window3 window = canonical_window(conv);
  return {std::move(conv), window, pixel_filters_phased(d)};
}

// Per axis, as the template's phases and halo_extent: the stride phases
// the kernel runs, and the input a tile of `outputs` reads.
long long axis_phases(const KernelProblem& p, std::size_t a) {
  return p.phases ? p.window.stride[a] : 1;
}
long long axis_extent(const KernelProblem& p, long long outputs, std::size_t a) {
  const Window3& win = p.window;
  const long long reach = (win.size[a] - 1) * win.dilation[a];
  return p.phases ? outputs + reach / win.stride[a] : (outputs - 1) * win.stride[a] + reach + 1;
}

// The input a tile of output pixels reads, every channel.
long long staged_halo(const KernelProblem& p, const View5& w) {
  return w.dims[1] * axis_extent(p, 1, 0) * axis_extent(p, kRows, 1) * axis_extent(p, kCols, 2);
}

// The most taps that land on one stride phase: along an axis of stride
// s and dilation d, the taps r with r d in one class mod s, every s /
// gcd(s, d)-th.
long long phase_taps(const KernelProblem& p) {
  const Window3& win = p.window;
  long long taps = 1;
  for (std::size_t a = 0; a < 3; ++a) {
    const long long period =
        p.phases ? win.stride[a] / std::gcd(win.stride[a], win.dilation[a]) : 1;
    taps *= ceil_div(win.size[a], period);
  }
  return taps;
}

}  // namespace

OpDescriptor pixel_filters_problem(const OpDescriptor& d) {
  if (unit_stride_bwddata(d)) return bwddata_as_forward(d);
  return pixel_filters_phased(d) ? bwddata_operands_as_forward(d) : d;
}

Status pixel_filters_support(const OpDescriptor& d) {
  const auto refuse = [](std::string_view why) {
    return Status::not_available(fmt::format("variant {} {}", kPixelsVariant, why));
  };
  if (d.kind != OpKind::conv || d.direction == Direction::bwdfilt)
    return refuse("serves conv fwd and bwddata only");
  if (d.groups != 1)
    return refuse(
        fmt::format("serves convs of one group; this one has {}: use direct, or "
                    "depthwise for groups = C",
                    d.groups));
  if (d.dtype == DataType::f64)
    return refuse("accumulates in f32, which f64 does not allow: use direct");
  if (const std::size_t bytes = pixel_filter_shared_bytes(d);
      bytes > CONVJIT_PIXELS_MAX_SHARED_BYTES)
    return refuse(fmt::format(
        "keeps the filters and a tile's input (C x taps x K, and C x the {} x {} output pixels' "
        "window, in f32) in {} bytes of shared memory at most; this conv's take {}: use direct "
        "or a GEMM tile",
        kRows, kCols, CONVJIT_PIXELS_MAX_SHARED_BYTES, bytes));
  return Status::ok();
}

bool pixel_filters_lead(const OpDescriptor& desc) {
  constexpr long long kMaxReduction = 96;  // C x taps: between the H200's 72 (won) and 144 (lost)
  const KernelProblem p = problem_of(desc);
  if (p.phases) return false;
  const View5 w = filter_view(p.conv);
  const View5 y = canonical_view(p.conv.y_dims, p.conv.y_strides, p.conv.spatial_dims);
  return w.dims[0] <= CONVJIT_PIXELS_FILTERS && w.dims[1] * phase_taps(p) <= kMaxReduction &&
         y.dims[3] >= kRows;
}

long long pixel_filter_items(const OpDescriptor& desc) {
  const KernelProblem p = problem_of(desc);
  const View5 y = canonical_view(p.conv.y_dims, p.conv.y_strides, p.conv.spatial_dims);
  long long tiles = y.dims[0];
  const long long tile[] = {1, kRows, kCols};
  for (std::size_t a = 0; a < 3; ++a)
    tiles *= axis_phases(p, a) * ceil_div(ceil_div(y.dims[a + 2], axis_phases(p, a)), tile[a]);
  // A block a tile.  Runs of tiles a block, the grid capped at a full
  // GPU's blocks, staged w less often but rounded the grid up to whole
  // waves of longer blocks, which the analyser predicted slower on
  // YOLO11n's 3 x 3 convs (bench/results/2026-12-04-pixel-filters-bwddata).
  return tiles * kJitThreadsPerBlock;
}

std::size_t pixel_filter_shared_bytes(const OpDescriptor& desc) {
  const KernelProblem p = problem_of(desc);
  const View5 w = filter_view(p.conv);
  return static_cast<std::size_t>(staged_weights(w) + staged_halo(p, w)) * sizeof(float);
}

}  // namespace convjit
