#include "dispatcher/backends/jit/kernel_source.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <initializer_list>

#include "dispatcher/backends/jit/bwddata_as_forward.hpp"
#include "dispatcher/backends/jit/filter_copy.hpp"
#include "dispatcher/backends/jit/kernel_operands.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/backends/jit/pixel_filters.hpp"
#include "dispatcher/backends/jit/wgmma_conv.hpp"
#include "dispatcher/cuda/gpu_arch.hpp"
#include "dispatcher/descriptor/canonical_layout.hpp"
#include "dispatcher/descriptor/resize_taps.hpp"
#include "kernel_templates/common/plane_tile_shape.cuh"
#include "kernel_templates/conv/depthwise_shape.cuh"
#include "kernel_templates/norm/batchnorm_shape.cuh"

namespace convjit {

namespace {

// Enough threads to fill a large GPU several times over (132 SMs x 2048).
constexpr long long kTargetThreads = 1 << 18;
constexpr long long kMaxBlocks = 1 << 20;  // grid-stride loops cover the rest

int dtype_code(DataType dtype) {
  switch (dtype) {
    case DataType::f32:
      return 0;
    case DataType::f16:
      return 1;
    case DataType::bf16:
      return 2;
    case DataType::f64:
      return -1;
  }
  return -1;
}

class PreludeWriter {
 public:
  PreludeWriter() { constant("BLOCK", kJitThreadsPerBlock); }
  void constant(const char* name, long long value) { constants_.push_back({name, value}); }
  void view(const char* prefix, const View5& v) {
    for (int i = 0; i < 5; ++i)
      constant(fmt::format("{}{}", prefix, i).c_str(), v.strides[static_cast<std::size_t>(i)]);
  }
  void spatial(const char* d, const char* h, const char* w, const std::array<std::int64_t, 3>& v) {
    constant(d, v[0]), constant(h, v[1]), constant(w, v[2]);
  }
  // A GEMM template's tile: CONVJIT_GEMM names its Math and tile shape.
  void gemm(const GemmTile& t) {
    gemm_ = fmt::format(
        "#define CONVJIT_GEMM convjit_device::{}<convjit_device::TileShape<{}, {}, {}, {}, {}>>\n",
        t.math == GemmMath::simt ? "SimtMma" : "WarpMma", t.bm, t.bn, t.warps_m, t.warps_n,
        t.stages);
  }
  // Moves the constants and the prelude into `out`.
  void finish(const OpDescriptor& d, KernelSource& out) {
    out.constants = std::move(constants_);
    out.source = kernel_text(out, d.dtype, gemm_);
  }

 private:
  std::vector<ProblemConstant> constants_;
  std::string gemm_;
};

// bwdfilt: split the reduction so that `threads` (per slice) x split
// threads fill the GPU, with at least 64 reduction steps per thread.
long long reduction_split(long long threads, long long reduction) {
  const long long wanted = (kTargetThreads + threads - 1) / threads;
  const long long most = std::max<long long>(1, reduction / 64);
  return std::clamp<long long>(wanted, 1, most);
}

// A reduction split `split` ways: its partial sums, `weights` per slice,
// in the f32 workspace, and the second pass that adds them (one thread per weight).
void add_split_pass(long long weights, long long split, KernelSource& out) {
  out.entries.push_back({"convjit_kernel_finish", weights});
  out.workspace_bytes = static_cast<std::size_t>(weights * split) * sizeof(float);
}

std::string template_for(const OpDescriptor& d, std::string_view variant, const GemmTile* tile) {
  if (d.kind == OpKind::bias_grad)
    return variant == kVectorVariant ? "conv/bias_grad_vector.cuh" : "conv/bias_grad.cuh";
  if (d.is_batchnorm())
    return fmt::format("norm/batchnorm_{}{}.cuh", d.direction == Direction::fwd ? "fwd" : "bwd",
                       variant == kVectorVariant ? "_vector" : "");
  if (d.is_resize())
    return fmt::format("resize/resize_{}{}.cuh", d.direction == Direction::fwd ? "fwd" : "bwd",
                       variant == kVectorVariant ? "_vector" : "");
  if (d.is_pool())
    return fmt::format("pool/pool_{}{}.cuh", d.direction == Direction::fwd ? "fwd" : "bwd",
                       variant == kVectorVariant ? "_vector"
                       : variant == kTileVariant ? "_tile"
                                                 : "");
  if (variant == kEpiloguePassVariant) return "conv/epilogue_pass.cuh";
  if (variant == kPixelsVariant) return "conv/conv_pixels.cuh";
  // The Hopper conv's: `d` is the forward conv it computes, where there is one.
  if (find_wgmma_config(variant) != nullptr)
    return d.direction == Direction::bwdfilt   ? "conv/conv_bwdfilt_wgmma.cuh"
           : d.direction == Direction::bwddata ? "conv/conv_bwddata_wgmma.cuh"
                                               : "conv/conv_fwd_wgmma.cuh";
  if (variant == kDepthwiseVariant)
    return fmt::format("conv/depthwise_{}.cuh", direction_name(d.direction));
  if (variant == kDepthwiseTileVariant)
    return fmt::format("conv/depthwise_{}_tile.cuh", direction_name(d.direction));
  const char* gemm = tile != nullptr ? "_gemm" : "";
  switch (d.direction) {
    case Direction::bwddata:
      return fmt::format("conv/conv_bwddata{}.cuh", gemm);
    case Direction::bwdfilt:
      return fmt::format("conv/conv_bwdfilt{}.cuh", gemm);
    default:
      return fmt::format("conv/conv_fwd{}.cuh", gemm);
  }
}

// The threads of the kernels built on channel vectors over the tensor
// they write (common/channel_vectors.cuh): a vector of channels at a
// strip of `strip` pixels each.
long long channel_vectors(const OpDescriptor& d, long long channels) {
  const auto vector = static_cast<long long>(16 / element_size(d.dtype));
  return (channels + vector - 1) / vector;
}
long long vector_items(const OpDescriptor& d, const View5& out, long long strip) {
  const long long strips = (out.dims[4] + strip - 1) / strip;
  return out.dims[0] * out.dims[2] * out.dims[3] * strips * channel_vectors(d, out.dims[1]);
}

// The tiles of the planes of the tensor written (common/plane_tile.cuh); a
// block computes one, and blocks beyond the grid's cap loop.
long long plane_tiles(const View5& written) {
  return written.dims[0] * written.dims[1] * written.dims[2] *
         ((written.dims[3] + CONVJIT_PLANE_TILE_ROWS - 1) / CONVJIT_PLANE_TILE_ROWS) *
         ((written.dims[4] + CONVJIT_PLANE_TILE_COLS - 1) / CONVJIT_PLANE_TILE_COLS);
}

// Whether a run of `run` elements along a dimension of stride `unit`
// loads in 16-byte chunks whatever the other strides add: the host's
// view of the templates' chunked() (gemm/tile_loader.cuh).
bool loads_in_chunks(const OpDescriptor& d, std::int64_t run, std::int64_t unit,
                     std::initializer_list<std::int64_t> others) {
  const auto chunk = static_cast<std::int64_t>(16 / element_size(d.dtype));
  return unit == 1 && run % chunk == 0 &&
         std::all_of(others.begin(), others.end(), [&](std::int64_t s) { return s % chunk == 0; });
}

// Whether the fwd and bwddata GEMMs read their filters from a copy in the
// order of B's K (conv/packed_filters.cuh): where w itself does not load
// in chunks along it and the copy does.  fwd's K runs along the channels
// (the copy's rows are whole filters), bwddata's along the filters.
bool packs_filters(const OpDescriptor& d, const View5& w) {
  const auto& ws = w.strides;
  const std::int64_t kg = w.dims[0] / d.groups, cg = w.dims[1];
  if (d.direction == Direction::fwd)
    return !loads_in_chunks(d, cg, ws[1], {ws[0], ws[2], ws[3], ws[4]}) &&
           loads_in_chunks(d, w.spatial_size() * cg, 1, {});
  if (d.direction == Direction::bwddata)
    return !loads_in_chunks(d, kg, ws[0], {ws[1], ws[2], ws[3], ws[4]}) &&
           loads_in_chunks(d, kg, 1, {});
  return false;
}

// A resize: per axis its ratio (f32 bits, computed as the reference
// computes it) and taps (resize/resize_axis.cuh); a thread per element, or
// per channel vector of a pixel, of the tensor written.
void resize_entries(const OpDescriptor& d, const View5& x, const View5& y, PreludeWriter& p,
                    KernelSource& out) {
  p.constant("MODE", static_cast<long long>(d.resize_mode));
  p.constant("COORD", static_cast<long long>(d.resize_coordinates));
  const char* ratios[] = {"RD", "RH", "RW"};
  const char* taps[] = {"TD", "TH", "TW"};
  const int first = kMaxSpatialDims - d.spatial_dims;
  for (int a = 0; a < kMaxSpatialDims; ++a) {
    const auto at = static_cast<std::size_t>(a + 2);
    const double scale = a < first ? 0.0 : d.resize_scale(a - first);
    const ResizeAxis<float> axis(d.resize_mode, d.resize_coordinates, x.dims[at], y.dims[at],
                                 scale);
    p.constant(ratios[a], std::bit_cast<std::uint32_t>(axis.ratio()));
    p.constant(taps[a], a >= first && d.resize_mode == ResizeMode::linear ? 2 : 1);
  }
  const View5& written = d.direction == Direction::fwd ? y : x;
  out.entries = {{"convjit_kernel", out.variant == kVectorVariant
                                        ? vector_items(d, written, 1)
                                        : written.dims[0] * written.dims[1] * written.spatial_size()}};
}

// A batchnorm (norm/batchnorm_reduction.cuh): its flags, and each
// channel's pixels cut into SPLIT slices: enough blocks to fill the GPU,
// each thread of a block summing at least 8 pixels of a slice.  Training
// and the backward reduce (a block per slice, per channel where channels
// are planes; then a block per channel) before the elementwise pass; a
// backward asked for no dx skips that pass.
void batchnorm_entries(const OpDescriptor& d, const View5& x, PreludeWriter& p,
                       KernelSource& out) {
  const long long channels = x.dims[1], count = x.dims[0] * x.spatial_size();
  const bool vectors = out.variant == kVectorVariant;
  constexpr long long kMinPixelsPerThread = 8;
  constexpr long long kBlocks = kTargetThreads / kJitThreadsPerBlock;
  // Threads of a block on one channel's pixels: a vector's rows, or all.
  const long long lanes =
      vectors ? kJitThreadsPerBlock / channel_vectors(d, channels) : kJitThreadsPerBlock;
  const long long split =
      std::clamp<long long>(vectors ? kBlocks : kBlocks / channels, 1,
                            std::max(1ll, count / (lanes * kMinPixelsPerThread)));
  const auto flag = [&](const char* name, NormFlag bit) {
    p.constant(name, d.has_norm_flag(bit) ? 1 : 0);
  };
  p.constant("COUNT", count), p.constant("SPLIT", split);
  p.constant("EPS", std::bit_cast<std::uint32_t>(static_cast<float>(d.norm_epsilon())));
  p.constant("ACT", static_cast<long long>(d.activation));
  flag("INFERENCE", kNormInference), flag("SCALE", kNormScale), flag("SHIFT", kNormShift);
  flag("ONNX", kNormOnnxRunningStats), flag("GRAD_INPUT", kNormGradInput);
  flag("GRAD_SCALE", kNormGradScale), flag("GRAD_SHIFT", kNormGradShift);
  const KernelEntry elementwise{
      "convjit_kernel", vectors ? vector_items(d, x, CONVJIT_NORM_STRIP) : count * channels};
  const bool forward = d.direction == Direction::fwd;
  if (forward && d.has_norm_flag(kNormInference)) {
    out.entries = {elementwise};
    return;
  }
  const long long blocks = vectors ? split : channels * split;
  out.entries = {{"convjit_kernel_prepare", blocks * kJitThreadsPerBlock, blocks},
                 {"convjit_kernel_finish", channels * kJitThreadsPerBlock, channels}};
  if (forward || d.has_norm_flag(kNormGradInput)) out.entries.push_back(elementwise);
  out.workspace_bytes = static_cast<std::size_t>((split + 1) * channels * 2) * sizeof(float);
}

// One block per output tile, per GEMM and per slice of a split reduction
// (conv/*_gemm.cuh); a split one adds its partial sums in a second pass,
// one thread per weight, and packed filters take a first pass, one thread
// per weight too.
Status gemm_entries(const OpDescriptor& d, const GemmTile& t, const View5& w, PreludeWriter& p,
                    KernelSource& out) {
  const GemmShape g = *gemm_shape(d);
  const long long blocks = gemm_blocks(g, t), split = gemm_split(g, t);
  constexpr long long kMaxGrid = 0x7fffffff;  // gridDim.x
  if (blocks > kMaxGrid)
    return Status::unsupported(
        fmt::format("variant {} would launch {} blocks, beyond the grid's {}; use 'direct'", t.id,
                    blocks, kMaxGrid));
  out.entries = {{"convjit_kernel", blocks * kJitThreadsPerBlock, blocks}};
  if (d.direction != Direction::bwdfilt) {
    const bool packed = packs_filters(d, w);
    p.constant("PACKED", packed ? 1 : 0);
    if (!packed) return Status::ok();
    const long long weights = w.dims[0] * w.dims[1] * w.spatial_size();
    const FilterCopyOrder order = d.direction == Direction::bwddata ? FilterCopyOrder::backward_data
                                                                    : FilterCopyOrder::forward;
    out.entries.insert(out.entries.begin(), filter_copy_entry(w, order, d.groups, d.dtype));
    out.workspace_bytes = static_cast<std::size_t>(weights) * element_size(d.dtype);
    return Status::ok();
  }
  p.constant("SPLIT", split);
  if (split > 1) add_split_pass(g.m * g.n * g.count, split, out);
  return Status::ok();
}

// The Hopper conv's first pass that folds the conv's horizontal taps into
// x' and w' (conv/folded_taps.cuh, tap_fold.hpp) reads x and w as the
// caller holds them: their strides, C, W and the window along W.  The
// Problem's others are the folded conv's.  Written for every Hopper conv
// (FOLD 0 where it does not fold), since the template names them.
void fold_constants(const OpDescriptor& requested, const WgmmaConvLaunch& launch,
                    PreludeWriter& p) {
  const View5 x = canonical_view(requested.x_dims, requested.x_strides, requested.spatial_dims);
  const View5 w = canonical_view(requested.w_dims, requested.w_strides, requested.spatial_dims);
  const Window3 win = canonical_window(requested);
  p.constant("FOLD", launch.folded), p.constant("FOFFSET", launch.fold_filters_offset);
  p.constant("FC", x.dims[1]), p.constant("FW", x.dims[4]), p.constant("FS", win.size[2]);
  p.constant("FPW", win.pad_begin[2]), p.constant("FSW", win.stride[2]);
  p.constant("FDW", win.dilation[2]);
  p.view("FXS", x), p.view("FWS", w);
}

void epilogue_constants(const OpDescriptor& d, PreludeWriter& p) {
  p.constant("ACT", static_cast<long long>(d.activation));
  p.constant("BIAS", d.has_bias() ? 1 : 0);
  p.constant("RESIDUAL", d.has_residual() ? 1 : 0);
}

// The epilogue alone: a thread per element of y.
void epilogue_pass_entries(const OpDescriptor& d, const View5& y, PreludeWriter& p,
                           KernelSource& out) {
  p.constant("K", y.dims[1]);
  epilogue_constants(d, p);
  out.entries = {{"convjit_kernel", y.dims[0] * y.dims[1] * y.spatial_size()}};
  p.finish(d, out);
}

}  // namespace

std::string kernel_text(const KernelSource& source, DataType dtype, std::string_view defines) {
  std::string body;
  for (const ProblemConstant& c : source.constants)
    body += fmt::format("  static constexpr long long {} = {};\n", c.name, c.value);
  return fmt::format(
      "// convjit JIT kernel for {} ({})\n#define CONVJIT_DTYPE {}\n{}struct Problem {{\n{}}};\n"
      "#include \"{}\"\n",
      source.template_name, source.variant, dtype_code(dtype), defines, body,
      source.template_name);
}

unsigned KernelEntry::blocks() const {
  if (tiles > 0) return static_cast<unsigned>(tiles);
  const long long needed = (threads + threads_per_block - 1) / threads_per_block;
  return static_cast<unsigned>(std::clamp<long long>(needed, 1, kMaxBlocks));
}

Status jit_supports(const OpDescriptor& d) {
  if (d.symbolic_batch)
    return Status::unsupported("a symbolic-batch descriptor cannot be compiled");
  if (dtype_code(d.dtype) < 0)
    return Status::unsupported(
        "f64 is served by the host reference only; the JIT covers f32, f16, bf16");
  return Status::ok();
}

Status jit_supports_arch(const OpDescriptor& d, const std::string& arch) {
  constexpr int kBf16Arch = 80;
  if (d.dtype == DataType::bf16 && arch_number(arch) < kBf16Arch)
    return Status::unsupported(fmt::format(
        "bf16 kernels need sm_80 or newer (cvt.rn.bf16.f32); {} has no bf16 conversions", arch));
  return Status::ok();
}

Result<KernelSource> kernel_source(const OpDescriptor& requested, std::string_view variant) {
  if (Status s = jit_supports(requested); !s.is_ok()) return s;
  // An explicit variant is checked for fit only: whether the settings
  // allow it (TF32) is the backends' call (resolve_variant, build_variant).
  KernelSource out;
  out.variant = variant.empty() ? jit_variants(requested, variant_context("")).front()
                                : std::string(variant);
  if (Status s = check_variant(requested, out.variant, {"", true}); !s.is_ok()) return s;
  // The Hopper conv's and the conv of few filters' constants are those of
  // the forward conv they compute.
  const WgmmaConvConfig* wgmma = find_wgmma_config(out.variant);
  const bool pixels = out.variant == kPixelsVariant;
  const OpDescriptor d = wgmma != nullptr ? wgmma_forward_equivalent(requested)
                         : pixels         ? pixel_filters_problem(requested)
                                          : requested;
  const GemmTile* tile = find_gemm_tile(out.variant);
  out.template_name = template_for(d, out.variant, tile);
  PreludeWriter p;
  if (tile != nullptr) p.gemm(*tile);
  const View5 y = canonical_view(d.y_dims, d.y_strides, d.spatial_dims);
  if (d.kind == OpKind::bias_grad) {
    p.constant("N", y.dims[0]), p.constant("K", y.dims[1]);
    p.spatial("OD", "OH", "OW", {y.dims[2], y.dims[3], y.dims[4]});
    p.view("YS", y);
    if (out.variant == kVectorVariant) {
      // A thread per vector of filters, per slice of the pixels.
      const long long items = channel_vectors(d, y.dims[1]);
      const long long split = reduction_split(items, y.dims[0] * y.spatial_size());
      p.constant("SPLIT", split);
      out.entries = {{"convjit_kernel", items * split}};
      add_split_pass(y.dims[1], split, out);
    } else {
      out.entries = {{"convjit_kernel", y.dims[1] * kJitThreadsPerBlock}};  // a block per filter
    }
    p.finish(d, out);
    return out;
  }
  const View5 x = canonical_view(d.x_dims, d.x_strides, d.spatial_dims);
  p.constant("N", x.dims[0]), p.constant("C", x.dims[1]);
  p.spatial("D", "H", "W", {x.dims[2], x.dims[3], x.dims[4]});
  p.spatial("OD", "OH", "OW", {y.dims[2], y.dims[3], y.dims[4]});
  if (d.is_resize() || d.is_batchnorm()) {
    p.view("XS", x), p.view("YS", y);
    if (d.is_resize()) resize_entries(d, x, y, p, out);
    if (d.is_batchnorm()) batchnorm_entries(d, x, p, out);
    p.finish(d, out);
    return out;
  }
  const Window3 win = canonical_window(d);
  p.spatial("T", "R", "S", win.size);
  p.spatial("PD", "PH", "PW", win.pad_begin);
  p.spatial("SD", "SH", "SW", win.stride);
  p.spatial("DD", "DH", "DW", win.dilation);
  p.view("XS", x), p.view("YS", y);
  const long long outputs = y.dims[0] * y.dims[1] * y.spatial_size();
  const long long inputs = x.dims[0] * x.dims[1] * x.spatial_size();
  if (d.is_pool()) {
    p.spatial("QD", "QH", "QW", win.pad_end);
    p.constant("MODE", static_cast<long long>(d.pool_mode));
    if (out.variant == kVectorVariant)
      out.entries = {{"convjit_kernel", vector_items(d, d.direction == Direction::fwd ? y : x, 1)}};
    else if (out.variant == kTileVariant)
      out.entries = {{"convjit_kernel",
                      plane_tiles(d.direction == Direction::fwd ? y : x) * kJitThreadsPerBlock}};
    else
      out.entries = {{"convjit_kernel", d.direction == Direction::fwd ? outputs : inputs}};
    p.finish(d, out);
    return out;
  }
  const View5 w = canonical_view(d.w_dims, d.w_strides, d.spatial_dims);
  if (out.variant == kEpiloguePassVariant) {
    epilogue_pass_entries(d, y, p, out);
    return out;
  }
  p.constant("K", w.dims[0]), p.constant("G", d.groups), p.constant("CG", w.dims[1]);
  p.view("WS", w);
  if (takes_epilogue_operands(d)) epilogue_constants(d, p);
  const long long weights = w.dims[0] * w.dims[1] * w.spatial_size();
  if (wgmma != nullptr) {
    WgmmaConvLaunch launch = wgmma_conv_launch(requested, *wgmma);
    p.constant("RANK", launch.rank), p.constant("STAGES", launch.stages);
    p.constant("STEP", launch.step);
    p.constant("TILE_N", launch.filters), p.constant("CONSUMERS", launch.consumers);
    p.constant("BLOCKS_PER_SM", launch.blocks_per_sm), p.constant("FLIP", launch.flip);
    p.constant("FILTERS_MN", launch.filters_mn), p.constant("PACKED", launch.packed);
    p.constant("FILL_PHASES", launch.fills_phases);
    p.constant("SPLIT", launch.split), p.constant("PARTIALS", launch.partials_offset);
    p.constant("PINGPONG", launch.ping_pong), p.constant("CLUSTER", launch.cluster);
    p.constant("CLUSTER_PIXELS", launch.cluster_pixels);
    p.constant("ROW_TAPS", launch.row_taps), p.constant("TMA_STORE", launch.tma_store);
    p.constant("STREAM_K", launch.stream_k);
    p.constant("SUM_IN_CLUSTER", launch.cluster_slices);
    p.constant("PARTIAL_SUMS", launch.partial_sums);
    p.spatial("AD", "AH", "AW", launch.origin);
    fold_constants(requested, launch, p);
    out.entries = std::move(launch.entries);
    out.workspace_bytes = launch.workspace_bytes;
    out.zeroed_offset = launch.zeroed_offset, out.zeroed_bytes = launch.zeroed_bytes;
    out.tensor_maps = std::move(launch.maps);
    out.arch_specific = true;
  } else if (tile != nullptr) {
    if (Status s = gemm_entries(d, *tile, w, p, out); !s.is_ok()) return s;
  } else if (pixels) {
    p.constant("FLIP", unit_stride_bwddata(requested) ? 1 : 0);
    p.constant("PHASED", pixel_filters_phased(requested) ? 1 : 0);
    out.entries = {
        {"convjit_kernel", pixel_filter_items(requested), 0, pixel_filter_shared_bytes(requested)}};
  } else if (out.variant == kDepthwiseVariant && d.direction == Direction::bwdfilt) {
    // A thread per vector of filters and tap, per slice of the pixels.
    const long long items = w.spatial_size() * channel_vectors(d, w.dims[0]);
    const long long split = reduction_split(items, y.dims[0] * y.spatial_size());
    p.constant("SPLIT", split);
    out.entries = {{"convjit_kernel", items * split}};
    add_split_pass(weights, split, out);
  } else if (out.variant == kDepthwiseTileVariant && d.direction == Direction::bwdfilt) {
    // A block per filter and slice of its dy planes' tiles.
    const long long tiles = plane_tiles(y) / y.dims[1];
    const long long split = std::clamp<long long>(kTargetThreads / kJitThreadsPerBlock / w.dims[0],
                                                  1, tiles);
    p.constant("SPLIT", split);
    out.entries = {{"convjit_kernel", w.dims[0] * split * kJitThreadsPerBlock, w.dims[0] * split}};
    add_split_pass(weights, split, out);
  } else if (out.variant == kDepthwiseTileVariant) {
    out.entries = {{"convjit_kernel",
                    plane_tiles(d.direction == Direction::fwd ? y : x) * kJitThreadsPerBlock}};
  } else if (out.variant == kDepthwiseVariant) {
    const View5& written = d.direction == Direction::fwd ? y : x;
    out.entries = {{"convjit_kernel", vector_items(d, written, CONVJIT_DEPTHWISE_STRIP)}};
  } else if (d.direction == Direction::bwdfilt) {
    const long long split = reduction_split(weights, y.dims[0] * y.spatial_size());
    p.constant("SPLIT", split);
    out.entries = {{"convjit_kernel", weights * split}};
    add_split_pass(weights, split, out);
  } else {
    out.entries = {{"convjit_kernel", d.direction == Direction::fwd ? outputs : inputs}};
  }
  p.finish(d, out);
  return out;
}

}  // namespace convjit
