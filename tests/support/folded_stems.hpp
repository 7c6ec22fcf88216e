// Convs whose taps the Hopper conv folds into their channels
// (dispatcher/backends/jit/tap_fold.hpp): stems of 1 to 5 channels in
// every layout (the first pass reads x through its strides, NCHW too),
// odd sizes, strides (one past TMA's 8 along W, which the fold removes),
// dilations and padding at every edge along W, 1D/2D/3D, K C R S and
// K R S C filters, filters on and off the 64-filter tile.  Case i suits
// kWgmmaConfigs[i % 8]; the third of each four takes a fused epilogue.
#pragma once

#include <cstdint>
#include <vector>

#include "support/problems.hpp"

namespace convjit::test {

inline std::vector<ConvCase> folded_stem_cases() {
  const std::int64_t channels[] = {3, 1, 4, 5, 3, 3, 2, 3};
  std::vector<ConvCase> cases;
  for (int i = 0; i < 8; ++i) {
    const int dims = 1 + i % 3;
    ConvCase c;
    c.batch = 1 + i % 2, c.channels = channels[i], c.filters = i % 2 ? 40 : 72;
    c.layout = i % 3 == 0 ? TestLayout::nchw : TestLayout::nhwc;
    c.filter_layout = i % 2 ? TestLayout::nhwc : TestLayout::nchw;
    for (int a = 0; a < dims; ++a) {
      const bool w = a == dims - 1;  // the folded axis: the widest windows
      c.input.push_back(w ? 11 + 4 * i : 5 + a);
      c.kernel.push_back(w ? 2 + i % 6 : 1 + (i + a) % 3);
      c.stride.push_back(w ? 1 + i % 3 + (i == 5 ? 8 : 0) : 1 + a % 2);
      c.dilation.push_back(w && i % 4 == 3 ? 2 : 1);
      c.pad_begin.push_back(w ? i % 4 : a % 2);
      c.pad_end.push_back(w ? (i + 1) % 3 : 0);
    }
    cases.push_back(c);
  }
  return cases;
}

// ResNet-50's stem (3 channels, 7 x 7 /2, 64 filters) on a small image.
inline ConvCase small_resnet50_stem() {
  ConvCase stem;
  stem.batch = 2, stem.channels = 3, stem.filters = 64, stem.input = {29, 23};
  stem.kernel = {7, 7}, stem.stride = {2, 2}, stem.pad_begin = {3, 3};
  stem.layout = TestLayout::nhwc;
  return stem;
}

}  // namespace convjit::test
