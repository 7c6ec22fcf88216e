// Max-pool inputs with no tie inside any window.
//
// Where a window holds its maximum twice, convjit's reference and JIT send
// the gradient to the first in window order, while cuDNN's max-pool
// backward picks one of them without saying which.  f16 and bf16 inputs
// tie often.  So cuDNN's max-pool backward is compared on inputs whose
// windows cannot tie: an element's value depends only on its position
// modulo the window (a random permutation of the window's cells per
// (batch, channel) plane), and any k consecutive positions have k distinct
// residues.  That needs windows of consecutive elements (dilation 1, as
// cuDNN's pooling has), and the values, (cell - volume / 2) / 8, are exact
// in bf16 for windows of up to 512 cells.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <vector>

#include "dispatcher/descriptor/op_descriptor.hpp"
#include "dispatcher/descriptor/operand_layout.hpp"

namespace convjit::test {

inline void make_pool_input_tie_free(const OpDescriptor& d, std::vector<unsigned char>& x,
                                     std::mt19937& rng) {
  std::int64_t volume = 1;
  for (int i = 0; i < d.spatial_dims; ++i) {
    ASSERT_EQ(d.dilation[i], 1) << "tie-free inputs need windows of consecutive elements";
    volume *= d.window[i];
  }
  ASSERT_LE(volume, 512) << "window too large for exact bf16 values";
  std::vector<int> cells(static_cast<std::size_t>(volume));
  const int rank = d.rank();
  std::int64_t planes = d.x_dims[0] * d.x_dims[1], plane_size = 1;
  for (int i = 2; i < rank; ++i) plane_size *= d.x_dims[i];
  for (std::int64_t plane = 0; plane < planes; ++plane) {
    std::iota(cells.begin(), cells.end(), 0);
    std::shuffle(cells.begin(), cells.end(), rng);
    for (std::int64_t p = 0; p < plane_size; ++p) {
      std::int64_t offset = (plane / d.x_dims[1]) * d.x_strides[0] +
                            (plane % d.x_dims[1]) * d.x_strides[1];
      std::int64_t cell = 0, rest = p;
      for (int i = rank - 1; i >= 2; --i) {  // innermost spatial dim first
        const std::int64_t position = rest % d.x_dims[i];
        rest /= d.x_dims[i];
        offset += position * d.x_strides[i];
        cell = cell * d.window[i - 2] + position % d.window[i - 2];
      }
      const double value = static_cast<double>(cells[static_cast<std::size_t>(cell)] - volume / 2) / 8;
      store_element(x.data(), static_cast<std::size_t>(offset), d.dtype, value);
    }
  }
}

}  // namespace convjit::test
