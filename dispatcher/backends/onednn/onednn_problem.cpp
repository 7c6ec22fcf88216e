#include "dispatcher/backends/onednn/onednn_problem.hpp"

#include <fmt/format.h>

#include <limits>

#include "dispatcher/backends/reference/tensor_view.hpp"
#include "dispatcher/descriptor/output_shape.hpp"
#include "dispatcher/descriptor/resize_taps.hpp"

namespace convjit {

namespace {

constexpr const char* kAxisNames[] = {"first", "second", "third"};

OnednnTensor tensor(const Dims5& dims, const Dims5& strides, int rank) {
  OnednnTensor t;
  t.ndims = rank;
  for (int i = 0; i < rank; ++i) t.dims[i] = dims[i], t.strides[i] = strides[i];
  return t;
}

// (K, C/G, spatial...) -> (G, K/G, C/G, spatial...): group g's filters start
// K/G filters further on.
OnednnTensor grouped_filter(const OpDescriptor& d) {
  const int rank = d.rank();
  OnednnTensor t = tensor(d.w_dims, d.w_strides, rank);
  if (d.groups == 1) return t;
  t.ndims = rank + 1;
  t.dims[0] = d.groups;
  t.strides[0] = d.w_dims[0] / d.groups * d.w_strides[0];
  for (int i = 0; i < rank; ++i) t.dims[i + 1] = d.w_dims[i], t.strides[i + 1] = d.w_strides[i];
  t.dims[1] = d.w_dims[0] / d.groups;
  return t;
}

// Whether some output's window on this dim sees only padding.
bool has_padding_only_window(const WindowGeometry& g, std::int64_t outputs) {
  for (std::int64_t o = 0; o < outputs; ++o) {
    const reference::TapRange taps =
        reference::valid_taps(o, g.input, g.window, g.pad_begin, g.stride, g.dilation);
    if (taps.begin == taps.end) return true;
  }
  return false;
}

// The end padding oneDNN needs to size the output as convjit does: the
// smallest that fits the last window, or pad_end where that already gives it.
std::int64_t pooling_pad_end(const WindowGeometry& g, std::int64_t outputs) {
  if (output_size(g, Rounding::floor) == outputs) return g.pad_end;
  return (outputs - 1) * g.stride + g.extent() - g.input - g.pad_begin;
}

Status pooling_parameters(const OpDescriptor& d, OnednnProblem& p) {
  for (int i = 0; i < d.spatial_dims; ++i) {
    const WindowGeometry g{d.x_dims[2 + i], d.window[i], d.pad_begin[i],
                           d.pad_end[i],    d.stride[i], d.dilation[i]};
    const std::int64_t out = d.y_dims[2 + i];
    const std::int64_t last_window_end = (out - 1) * g.stride - g.pad_begin + g.extent();
    if (d.pool_mode == PoolingMode::avg_include_pad && last_window_end > g.input + g.pad_end)
      return Status::unsupported(fmt::format(
          "the last window on the {} spatial dim reaches past pad_end {} (ceil mode): the "
          "reference divides by the clipped window, oneDNN by the whole one",
          kAxisNames[i], g.pad_end));
    if (has_padding_only_window(g, out))
      return Status::unsupported(fmt::format(
          "a window on the {} spatial dim sees only padding (dilation {}): the reference gives "
          "-inf there, which oneDNN does not promise",
          kAxisNames[i], g.dilation));
    p.pad_end[i] = pooling_pad_end(g, out);
  }
  return Status::ok();
}

// oneDNN's kernels assume no two elements of a tensor share an address: a
// broadcast operand (a zero stride, as torch's expand makes) crashes them.
Status no_broadcast(const OnednnTensor& t, const char* name) {
  for (int i = 0; i < t.ndims; ++i)
    if (t.strides[i] == 0 && t.dims[i] > 1)
      return Status::unsupported(fmt::format(
          "{} is broadcast (stride 0 on dim {} of size {}), which oneDNN's kernels do not read",
          name, i, t.dims[i]));
  return Status::ok();
}

// Whether nearest resizing by an integer factor k reads input o / k for
// every output o, which is oneDNN's map at that factor.
bool reads_o_over_k(const OpDescriptor& d, int i, std::int64_t k) {
  const std::int64_t in = d.x_dims[2 + i], out = d.y_dims[2 + i];
  const ResizeAxis<float> axis(d.resize_mode, d.resize_coordinates, in, out, d.resize_scale(i));
  for (std::int64_t o = 0; o < out; ++o)
    if (axis.tap(o).first != o / k) return false;
  return true;
}

Status resampling_parameters(const OpDescriptor& d, OnednnProblem& p) {
  p.linear = d.resize_mode == ResizeMode::linear;
  if (p.linear && d.resize_coordinates != ResizeCoordinates::half_pixel)
    return Status::unsupported(
        fmt::format("oneDNN's linear resampling maps half-pixel coordinates only, not {}",
                    resize_coordinates_name(d.resize_coordinates)));
  for (int i = 0; i < d.spatial_dims; ++i) {
    const std::int64_t in = d.x_dims[2 + i], out = d.y_dims[2 + i];
    const double scale = d.resize_scale(i);
    p.factors[i] = static_cast<float>(static_cast<double>(out) / static_cast<double>(in));
    // oneDNN maps with the sizes' ratio; a given scale that the output size
    // rounded (PyTorch's 7 * 0.5 = 3) maps differently.
    if (scale > 0 && static_cast<double>(in) * scale != static_cast<double>(out))
      return Status::unsupported(fmt::format(
          "oneDNN's resampling maps with the sizes' ratio {}/{}, not the given scale {} on the "
          "{} spatial dim",
          out, in, scale, kAxisNames[i]));
    if (p.linear) continue;
    if (out % in != 0 || !reads_o_over_k(d, i, out / in))
      return Status::unsupported(fmt::format(
          "oneDNN's nearest resampling rounds half-pixel coordinates; it matches {} {} only "
          "where an integer upscale reads input o / k, which the {} spatial dim ({} to {}) "
          "does not",
          resize_mode_name(d.resize_mode), resize_coordinates_name(d.resize_coordinates),
          kAxisNames[i], in, out));
    p.factors[i] = static_cast<float>(out / in);
  }
  return Status::ok();
}

}  // namespace

Result<OnednnProblem> onednn_problem(const OpDescriptor& d) {
  if (d.symbolic_batch) return Status::unsupported("a symbolic-batch descriptor has no shape");
  if (d.dtype == DataType::f64)
    return Status::unsupported("oneDNN has no f64; the host reference serves it");
  const int rank = d.rank();
  OnednnProblem p;
  p.y = tensor(d.y_dims, d.y_strides, rank);
  if (Status s = no_broadcast(p.y, "y"); !s.is_ok()) return s;
  if (d.kind == OpKind::bias_grad) {
    p.w.ndims = rank;
    p.w.dims.fill(1), p.w.strides.fill(1);
    p.w.dims[1] = d.y_dims[1];
    p.w.strides[0] = d.y_dims[1];
    return p;
  }
  p.x = tensor(d.x_dims, d.x_strides, rank);
  if (Status s = no_broadcast(p.x, "x"); !s.is_ok()) return s;
  if (d.is_batchnorm()) return p;
  if (d.is_resize()) {
    if (Status s = resampling_parameters(d, p); !s.is_ok()) return s;
    return p;
  }
  for (int i = 0; i < d.spatial_dims; ++i) {
    p.window[i] = d.is_conv() ? d.w_dims[2 + i] : d.window[i];
    p.stride[i] = d.stride[i];
    p.dilation[i] = d.dilation[i] - 1;
    p.pad_begin[i] = d.pad_begin[i];
    p.pad_end[i] = d.pad_end[i];
  }
  if (d.is_pool()) {
    if (Status s = pooling_parameters(d, p); !s.is_ok()) return s;
    return p;
  }
  // oneDNN sizes a padded input in int: pads near 2^31 (valid here) would
  // overflow there and fail the call instead of declining it.
  for (int i = 0; i < d.spatial_dims; ++i)
    if (d.x_dims[2 + i] + d.pad_begin[i] + d.pad_end[i] > std::numeric_limits<std::int32_t>::max())
      return Status::unsupported(
          fmt::format("the padded {} spatial dim ({} + {} + {}) is past oneDNN's int range",
                      kAxisNames[i], d.x_dims[2 + i], d.pad_begin[i], d.pad_end[i]));
  p.w = grouped_filter(d);
  if (Status s = no_broadcast(p.w, "w"); !s.is_ok()) return s;
  return p;
}

}  // namespace convjit
