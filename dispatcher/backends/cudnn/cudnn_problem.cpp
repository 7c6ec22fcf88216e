#include "dispatcher/backends/cudnn/cudnn_problem.hpp"

#include <fmt/format.h>

#include <limits>

#include "dispatcher/descriptor/output_shape.hpp"

namespace convjit {

namespace {

constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
constexpr const char* kAxisNames[] = {"first", "second", "third"};

// Dims and strides of a tensor slot, with a unit height inserted for 1D.
// The unit dim's stride is that of a dense row, so a packed NCW or NWC
// tensor stays a packed NCHW or NHWC one.
Result<CudnnTensorShape> tensor_shape(const char* name, const Dims5& dims, const Dims5& strides,
                                      int spatial_dims) {
  std::array<std::int64_t, 5> d{}, s{};
  int rank = spatial_dims + 2;
  for (int i = 0; i < rank; ++i) d[i] = dims[i], s[i] = strides[i];
  if (spatial_dims == 1) {
    d = {dims[0], dims[1], 1, dims[2], 0};
    s = {strides[0], strides[1], strides[2] * dims[2], strides[2], 0};
    rank = 4;
  }
  CudnnTensorShape out;
  out.rank = rank;
  std::int64_t last = 0;  // offset of the last element
  for (int i = 0; i < rank; ++i) {
    last += (d[i] - 1) * s[i];
    if (d[i] > kIntMax || s[i] > kIntMax || last > kIntMax)
      return Status::unsupported(fmt::format(
          "{} spans more than 2^31-1 elements; cuDNN's descriptor API uses 32-bit sizes", name));
    out.dims[i] = static_cast<int>(d[i]);
    out.strides[i] = static_cast<int>(s[i]);
  }
  return out;
}

// The filter's format: cuDNN filters are dense, NCHW or NHWC.
Result<bool> filter_channels_last(const OpDescriptor& d) {
  const int rank = d.rank();
  if (d.w_strides == contiguous_strides(d.w_dims, rank, false)) return false;
  if (d.w_strides == contiguous_strides(d.w_dims, rank, true)) return true;
  return Status::unsupported(
      "the filter is neither dense NCHW nor dense NHWC, the two layouts cuDNN filters take");
}

// Pad, stride, dilation and window per dim, with a unit first dim for 1D,
// after checking that cuDNN's symmetric padding gives this problem's result.
Status spatial_parameters(const OpDescriptor& d, CudnnProblem& p) {
  const int offset = d.spatial_dims == 1 ? 1 : 0;
  if (offset) p.window[0] = 1, p.pad[0] = 0, p.stride[0] = 1, p.dilation[0] = 1;
  for (int i = 0; i < d.spatial_dims; ++i) {
    const WindowGeometry g{d.x_dims[2 + i], d.is_conv() ? d.w_dims[2 + i] : d.window[i],
                           d.pad_begin[i], d.pad_begin[i], d.stride[i], d.dilation[i]};
    const std::int64_t out = d.y_dims[2 + i];
    if (d.is_pool() && g.dilation != 1)
      return Status::unsupported(fmt::format(
          "dilation {} on the {} spatial dim: cuDNN pooling has no dilation", g.dilation,
          kAxisNames[i]));
    if (d.pad_begin[i] != d.pad_end[i] && output_size(g, Rounding::floor) != out)
      return Status::unsupported(fmt::format(
          "padding {}/{} on the {} spatial dim: cuDNN pads both sides alike, and with {} on both "
          "the output would have {} entries, not {}",
          d.pad_begin[i], d.pad_end[i], kAxisNames[i], d.pad_begin[i],
          output_size(g, Rounding::floor), out));
    if (d.is_pool() && output_size(g, Rounding::floor) != out)
      return Status::unsupported(fmt::format(
          "the pooled output has {} entries on the {} spatial dim where cuDNN's floor rule gives "
          "{} (ceil mode)",
          out, kAxisNames[i], output_size(g, Rounding::floor)));
    const std::int64_t last_window_end = (out - 1) * g.stride - g.pad_begin + g.extent();
    if (d.pool_mode == PoolingMode::avg_include_pad &&
        last_window_end > g.input + d.pad_end[i])
      return Status::unsupported(fmt::format(
          "the last window on the {} spatial dim reaches past pad_end {}: the reference divides "
          "by the clipped window, cuDNN by the whole one",
          kAxisNames[i], d.pad_end[i]));
    p.window[offset + i] = static_cast<int>(g.window);
    p.pad[offset + i] = static_cast<int>(g.pad_begin);
    p.stride[offset + i] = static_cast<int>(g.stride);
    p.dilation[offset + i] = static_cast<int>(g.dilation);
  }
  return Status::ok();
}

Result<CudnnProblem> bias_problem(const OpDescriptor& d) {
  // Seen on an H200 with cuDNN 9.14 (bench/results/2026-11-26-h200): every
  // bf16 call returned CUDNN_STATUS_NOT_SUPPORTED.  Declining here sends
  // bf16 bias gradients to the JIT instead of failing at execute.
  if (d.dtype == DataType::bf16)
    return Status::unsupported(
        "cuDNN's bias gradient (cudnnConvolutionBackwardBias) does not take bf16; the JIT and "
        "the host serve it");
  CudnnProblem p;
  p.spatial_dims = d.spatial_dims == 1 ? 2 : d.spatial_dims;
  auto dy = tensor_shape("dy", d.y_dims, d.y_strides, d.spatial_dims);
  if (!dy.is_ok()) return dy.status();
  p.y = dy.value();
  p.w.rank = p.y.rank;
  p.w.dims = {1, p.y.dims[1], 1, 1, 1};
  p.w.strides = {p.y.dims[1], 1, 1, 1, 1};
  return p;
}

}  // namespace

Result<CudnnProblem> cudnn_problem(const OpDescriptor& d) {
  if (d.is_resize()) return Status::unsupported("cuDNN has no resize");
  if (d.is_batchnorm())
    return Status::unsupported("convjit does not drive cuDNN's batch normalisation yet");
  if (d.symbolic_batch) return Status::unsupported("a symbolic-batch descriptor has no shape");
  if (d.dtype == DataType::f64)
    return Status::unsupported("f64 is served by the host reference only");
  if (d.kind == OpKind::bias_grad) return bias_problem(d);
  if (d.has_epilogue())
    return Status::unsupported(
        "cuDNN's convolution descriptors express the plain conv only (the backend adds the "
        "epilogue as a pass of its own)");
  CudnnProblem p;
  p.spatial_dims = d.spatial_dims == 1 ? 2 : d.spatial_dims;
  if (Status s = spatial_parameters(d, p); !s.is_ok()) return s;
  auto x = tensor_shape(d.direction == Direction::bwddata ? "dx" : "x", d.x_dims, d.x_strides,
                        d.spatial_dims);
  if (!x.is_ok()) return x.status();
  auto y = tensor_shape(d.direction == Direction::fwd ? "y" : "dy", d.y_dims, d.y_strides,
                        d.spatial_dims);
  if (!y.is_ok()) return y.status();
  p.x = x.value(), p.y = y.value();
  if (d.is_pool()) return p;
  auto channels_last = filter_channels_last(d);
  if (!channels_last.is_ok()) return channels_last.status();
  p.filter_channels_last = channels_last.value();
  auto w = tensor_shape("w", d.w_dims, d.w_strides, d.spatial_dims);
  if (!w.is_ok()) return w.status();
  p.w = w.value();
  p.groups = static_cast<int>(d.groups);
  return p;
}

std::size_t element_span(const CudnnTensorShape& shape) {
  std::size_t last = 0;
  for (int i = 0; i < shape.rank; ++i) {
    if (shape.dims[i] == 0) return 0;
    last += static_cast<std::size_t>(shape.dims[i] - 1) * static_cast<std::size_t>(shape.strides[i]);
  }
  return last + 1;
}

}  // namespace convjit
