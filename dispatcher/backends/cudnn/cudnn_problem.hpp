// How a convjit operation looks to cuDNN's descriptor API, and whether it
// can: plain data, so the translation and its rules are tested on machines
// without cuDNN or a GPU.
//
// - Tensors have rank 4 or 5; a 1D problem runs as 2D with a unit height.
// - cuDNN takes one padding per dimension.  A problem whose pad_end differs
//   from pad_begin is still served when that difference does not change the
//   result: the output has the size cuDNN computes from pad_begin on both
//   sides (outputs read padding as zero, so the end padding only decides how
//   many there are), and for average pooling that counts padding, every
//   window ends inside input + pad_end (the divisor is the whole window).
//   Otherwise it goes to the next backend with the reason.
// - Pooling: no dilation; ceil-mode shapes only where they equal floor's.
// - Sizes, strides and spans must fit cuDNN's 32-bit ints.
#pragma once

#include <array>
#include <cstddef>

#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

struct CudnnTensorShape {
  int rank = 0;  // 4 or 5
  std::array<int, 5> dims{};
  std::array<int, 5> strides{};
};

struct CudnnProblem {
  int spatial_dims = 0;   // 2 or 3 (a 1D problem is promoted)
  CudnnTensorShape x;     // the x slot (x or dx)
  CudnnTensorShape y;     // the y slot (y or dy)
  CudnnTensorShape w;     // conv: the filter, dense in w_format; bias: db as (1, K, 1, 1[, 1])
  bool filter_channels_last = false;  // conv: NHWC filter format, else NCHW
  std::array<int, 3> window{};        // conv: filter size; pool: window
  std::array<int, 3> pad{};
  std::array<int, 3> stride{};
  std::array<int, 3> dilation{};
  int groups = 1;
};

// How many elements a buffer laid out as `shape` spans: one past its last
// element's offset (strides may leave gaps, as NHWC and halos do).
[[nodiscard]] std::size_t element_span(const CudnnTensorShape& shape);

// The problem as cuDNN sees it, or UNSUPPORTED with the reason.
[[nodiscard]] Result<CudnnProblem> cudnn_problem(const OpDescriptor& desc);

}  // namespace convjit
