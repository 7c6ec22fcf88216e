#include "dispatcher/backends/jit/tap_fold.hpp"

#include <fmt/format.h>

#include "dispatcher/backends/jit/ceil_div.hpp"
#include "dispatcher/descriptor/dtype.hpp"
#include "dispatcher/settings.hpp"

namespace convjit {

namespace {

constexpr long long kFoldChunkElements = 8;   // 16 bytes of f16 or bf16
constexpr long long kMaxFoldedChannels = 64;  // the Hopper conv's K step
constexpr std::size_t kFoldAlignment = 256;
constexpr std::size_t kMaxFoldBytes = kDefaultCudnnWorkspaceLimitMib << 20;

long long folded_channels(const OpDescriptor& d) {
  const Window3 win = canonical_window(d);
  return ceil_div(win.size[2] * d.w_dims[1], kFoldChunkElements) * kFoldChunkElements;
}

// A bwdfilt of whole chunks of channels, channels-last, stride 1, with a
// row of taps to fold.  Unfolded, each tap is a column block of 64
// channels, most of them TMA's zero fill where C is 8 or 16; folded, a
// row of taps is S C channels, and x' copies x chunk by chunk
// (folded_taps.cuh).  Predicted on the H200 for YOLO11n's (batch 32):
// 0.50x the time with 16 channels, 0.35x with 8; strided (b1.conv, 16
// channels, stride 2), the same time: x' then holds rows the conv skips.
bool folds_narrow_bwdfilt(const OpDescriptor& d) {
  const View5 x = canonical_view(d.x_dims, d.x_strides, d.spatial_dims);
  return d.direction == Direction::bwdfilt && d.w_dims[1] % kFoldChunkElements == 0 &&
         canonical_window(d).size[2] > 1 && d.has_unit_stride() && x.strides[1] == 1;
}

// The shapes that fold, whatever their workspace.
bool folds_by_shape(const OpDescriptor& d) {
  if (!d.is_conv() || d.direction == Direction::bwddata || d.groups != 1 || d.spatial_dims < 1)
    return false;
  if (d.dtype != DataType::f16 && d.dtype != DataType::bf16) return false;
  if (folded_channels(d) > kMaxFoldedChannels) return false;
  return d.w_dims[1] % kFoldChunkElements != 0 || folds_narrow_bwdfilt(d);
}

}  // namespace

bool folds_taps(const OpDescriptor& d) {
  return folds_by_shape(d) && tap_fold_layout(d).workspace_bytes <= kMaxFoldBytes;
}

Status tap_fold_fits(const OpDescriptor& d) {
  if (!folds_by_shape(d)) return Status::ok();
  const std::size_t bytes = tap_fold_layout(d).workspace_bytes;
  if (bytes <= kMaxFoldBytes) return Status::ok();
  return Status::not_available(fmt::format(
      "would fold the conv's taps into its channels in {} MiB of workspace, beyond {} MiB: use "
      "a smaller batch or a tensor-core tile",
      bytes >> 20, kMaxFoldBytes >> 20));
}

OpDescriptor folded_conv(const OpDescriptor& d) {
  OpDescriptor e = d;
  const auto w_axis = static_cast<std::size_t>(d.spatial_dims - 1);  // in the spatial arrays
  const long long channels = folded_channels(d);
  e.x_dims[1] = e.w_dims[1] = channels;
  e.x_dims[w_axis + 2] = d.y_dims[w_axis + 2];
  e.w_dims[w_axis + 2] = 1;
  e.x_strides = contiguous_strides(e.x_dims, e.rank(), /*channels_last=*/true);
  e.w_strides = contiguous_strides(e.w_dims, e.rank(), /*channels_last=*/true);  // K T R S C
  e.pad_begin[w_axis] = e.pad_end[w_axis] = 0;
  e.stride[w_axis] = e.dilation[w_axis] = 1;
  return e;
}

TapFoldLayout tap_fold_layout(const OpDescriptor& d) {
  const OpDescriptor e = folded_conv(d);
  const View5 x = canonical_view(e.x_dims, e.x_strides, e.spatial_dims);
  const View5 w = canonical_view(e.w_dims, e.w_strides, e.spatial_dims);
  TapFoldLayout layout;
  layout.channels = x.dims[1];
  layout.pixels = x.dims[0] * x.spatial_size();
  layout.weights = w.dims[0] * w.dims[1] * w.spatial_size();
  const std::size_t element_bytes = element_size(d.dtype);
  const std::size_t pixels_bytes =
      static_cast<std::size_t>(layout.pixels * layout.channels) * element_bytes;
  layout.filters_offset = (pixels_bytes + kFoldAlignment - 1) / kFoldAlignment * kFoldAlignment;
  // A bwdfilt's dw' is its output: its partial sums follow x', as many as
  // the launch's slices (wgmma_conv.cpp).
  const bool writes_filters = d.direction == Direction::fwd;
  layout.workspace_bytes =
      layout.filters_offset +
      (writes_filters ? static_cast<std::size_t>(layout.weights) * element_bytes : 0);
  layout.first_pass_items = layout.pixels + (writes_filters ? layout.weights : 0);
  return layout;
}

}  // namespace convjit
