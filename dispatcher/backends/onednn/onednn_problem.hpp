// How a convjit operation looks to oneDNN, and whether it can: plain data,
// so the translation and its rules are tested without oneDNN loaded.
//
// - Tensors keep their rank (ncw, nchw, ncdhw) and their strides, whatever
//   they are: oneDNN's memory descriptors take any strides.
// - A grouped filter gains a leading groups dim: (G, K/G, C/G, spatial...).
// - oneDNN's dilation counts the gaps: convjit's dilation minus one.
// - Pooling in ceil mode: oneDNN sizes the output from the padding alone,
//   so the end padding grows until it gives convjit's output.  That is
//   exact for max pooling (padding never wins) and for average pooling that
//   excludes padding; average pooling that counts padding divides by the
//   whole window in oneDNN and by the window clipped to input + pad_end in
//   the reference, so it is declined where a window reaches past pad_end.
// - A dilated max-pooling window that sees only padding is declined: the
//   reference gives -inf there, and oneDNN's kernels do not say.
// - Resize runs on oneDNN's resampling, whose coordinates are half-pixel:
//   linear with half-pixel coordinates (PyTorch's align_corners=False),
//   and nearest where oneDNN's index map, round((o + 0.5) / F - 0.5), is
//   convjit's: an integer upscale by k whose mode reads input o / k (PyTorch's
//   nearest among them).  oneDNN maps with the sizes' ratio: a given scale
//   the output size rounded is declined, as are other resizes.
// - Batchnorm takes x and y as they are (onednn_batchnorm.hpp).
// - f64 and symbolic batches are declined; f16 is left to oneDNN, which
//   declines it at build on CPUs it has no f16 kernels for.
#pragma once

#include <array>
#include <cstdint>

#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/result.hpp"

namespace convjit {

struct OnednnTensor {
  int ndims = 0;
  std::array<std::int64_t, 6> dims{};
  std::array<std::int64_t, 6> strides{};
};

struct OnednnProblem {
  OnednnTensor x;  // the x slot: x or dx
  OnednnTensor y;  // the y slot: y or dy
  OnednnTensor w;  // conv: the filter (grouped when groups > 1); bias: db as (1, K, 1...)
  std::array<std::int64_t, 3> window{};  // conv: filter size; pool: window
  std::array<std::int64_t, 3> stride{};
  std::array<std::int64_t, 3> dilation{};  // oneDNN's: gaps between taps
  std::array<std::int64_t, 3> pad_begin{};
  std::array<std::int64_t, 3> pad_end{};  // pooling: grown for ceil mode
  // Resize: oneDNN's resampling, linear or nearest, and its factors (out/in).
  bool linear = false;
  std::array<float, 3> factors{};
};

// The problem as oneDNN sees it, or UNSUPPORTED with the reason.
[[nodiscard]] Result<OnednnProblem> onednn_problem(const OpDescriptor& desc);

}  // namespace convjit
