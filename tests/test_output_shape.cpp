// The one output-size rule, floor and ceil.
#include <gtest/gtest.h>

#include "dispatcher/descriptor/output_shape.hpp"

namespace convjit {
namespace {

TEST(OutputShape, FloorRule) {
  EXPECT_EQ(output_size({224, 7, 3, 3, 2, 1}, Rounding::floor), 112);  // ResNet stem
  EXPECT_EQ(output_size({56, 3, 1, 1, 1, 1}, Rounding::floor), 56);
  EXPECT_EQ(output_size({7, 2, 0, 0, 2, 1}, Rounding::floor), 3);
  EXPECT_EQ(output_size({10, 3, 0, 0, 1, 3}, Rounding::floor), 4);  // extent 7
  EXPECT_EQ(output_size({3, 3, 2, 0, 1, 1}, Rounding::floor), 3);   // asymmetric
  EXPECT_EQ(output_size({2, 3, 0, 0, 1, 1}, Rounding::floor), 0);   // does not fit
}

TEST(OutputShape, CeilRuleDropsWindowsStartingInTheEndPadding) {
  EXPECT_EQ(output_size({5, 2, 0, 0, 2, 1}, Rounding::ceil), 3);
  EXPECT_EQ(output_size({5, 2, 0, 0, 2, 1}, Rounding::floor), 2);
  EXPECT_EQ(output_size({4, 3, 1, 1, 2, 1}, Rounding::ceil), 3);
  // ceil((5 + 2 - 2) / 2) + 1 = 4, but window 4 would start at 6 - 1 = 5,
  // past the input's last element 4 (index 5 = in + pad_begin - 1 + 1).
  EXPECT_EQ(output_size({5, 2, 1, 1, 2, 1}, Rounding::ceil), 3);
  EXPECT_EQ(output_size({112, 3, 1, 1, 2, 1}, Rounding::ceil), 57);
  EXPECT_EQ(output_size({112, 3, 1, 1, 2, 1}, Rounding::floor), 56);
}

TEST(OutputShape, InvalidParametersGiveZero) {
  EXPECT_EQ(output_size({8, 3, 0, 0, 0, 1}, Rounding::floor), 0);
  EXPECT_EQ(output_size({8, 3, 0, 0, 1, 0}, Rounding::floor), 0);
  EXPECT_EQ(output_size({8, 0, 0, 0, 1, 1}, Rounding::ceil), 0);
}

}  // namespace
}  // namespace convjit
