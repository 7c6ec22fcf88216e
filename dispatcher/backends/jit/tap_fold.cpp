#include "dispatcher/backends/jit/tap_fold.hpp"

#include <fmt/format.h>

#include <cstdint>

#include "dispatcher/backends/jit/ceil_div.hpp"

namespace convjit {

namespace {

constexpr long long kFoldChunkElements = 8;   // 16 bytes of f16 or bf16
constexpr long long kMaxFoldedChannels = 64;  // the Hopper conv's K step
constexpr std::size_t kFoldElementBytes = 2;
constexpr std::size_t kFoldAlignment = 256;
constexpr std::size_t kMaxFoldBytes = std::size_t{1} << 30;

long long folded_channels(const OpDescriptor& d) {
  const Window3 win = canonical_window(d);
  return ceil_div(win.size[2] * d.w_dims[1], kFoldChunkElements) * kFoldChunkElements;
}

// Packed channels-last strides for `dims` (N, C, spatial... in d's
// order): C innermost, then the last spatial axis outward, N outermost.
Dims5 channels_last_strides(const Dims5& dims, int spatial_dims) {
  Dims5 strides{};
  std::int64_t inner = dims[1];
  strides[1] = 1;
  for (int i = spatial_dims + 1; i >= 2; --i) {
    strides[static_cast<std::size_t>(i)] = inner;
    inner *= dims[static_cast<std::size_t>(i)];
  }
  strides[0] = inner;
  return strides;
}

// The shapes that fold, whatever their workspace.
bool folds_by_shape(const OpDescriptor& d) {
  if (!d.is_conv() || d.direction != Direction::fwd || d.groups != 1 || d.spatial_dims < 1)
    return false;
  if (d.dtype != DataType::f16 && d.dtype != DataType::bf16) return false;
  return d.w_dims[1] % kFoldChunkElements != 0 && folded_channels(d) <= kMaxFoldedChannels;
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
  e.x_strides = channels_last_strides(e.x_dims, d.spatial_dims);
  // w' is K T R S C: channels-last with K as the outermost axis.
  e.w_strides = channels_last_strides(e.w_dims, d.spatial_dims);
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
  const std::size_t pixels_bytes =
      static_cast<std::size_t>(layout.pixels * layout.channels) * kFoldElementBytes;
  layout.filters_offset = (pixels_bytes + kFoldAlignment - 1) / kFoldAlignment * kFoldAlignment;
  layout.workspace_bytes =
      layout.filters_offset + static_cast<std::size_t>(layout.weights) * kFoldElementBytes;
  return layout;
}

}  // namespace convjit
