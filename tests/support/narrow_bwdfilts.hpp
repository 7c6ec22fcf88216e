// Bwdfilts whose channels TMA maps but whose taps the Hopper conv folds
// all the same (dispatcher/backends/jit/tap_fold.hpp): 8, 16 or 24
// channels, channels-last, stride 1, rows of 2 to 8 taps along W (S C at
// most 64) with dilation and padding at both edges, odd sizes, 1D/2D/3D,
// K C R S and K R S C filters, filters on and off the 64-filter tile.
#pragma once

#include <cstdint>
#include <vector>

#include "support/problems.hpp"

namespace convjit::test {

inline std::vector<ConvCase> narrow_bwdfilt_cases() {
  const std::int64_t channels[] = {8, 16, 8, 16, 24, 8};
  const std::int64_t taps[] = {3, 3, 8, 4, 2, 5};
  const std::int64_t filters[] = {8, 16, 40, 72, 24, 64};
  std::vector<ConvCase> cases;
  for (int i = 0; i < 6; ++i) {
    const int dims = 1 + i % 3;
    ConvCase c;
    c.batch = 1 + i % 2, c.channels = channels[i], c.filters = filters[i];
    c.layout = TestLayout::nhwc;
    c.filter_layout = i % 2 ? TestLayout::nhwc : TestLayout::nchw;
    for (int a = 0; a < dims; ++a) {
      const bool w = a == dims - 1;  // the folded axis
      c.input.push_back(w ? 9 + 3 * i : 4 + a);
      c.kernel.push_back(w ? taps[i] : 1 + (i + a) % 3);
      c.stride.push_back(1);
      c.dilation.push_back(w && i % 3 == 2 ? 2 : 1);
      c.pad_begin.push_back(w ? i % 4 : a % 2);
      c.pad_end.push_back(w ? (i + 1) % 3 : 0);
    }
    cases.push_back(c);
  }
  return cases;
}

}  // namespace convjit::test
