// Two f64 sums per channel over every value of an activation tensor, the
// host batchnorm's reductions (its batch statistics and its parameter
// gradients):
//   first[c]  = sum of w,   second[c] = sum of w u,   u = x - center[c],
// with w = g (a gradient in x's layout) where one is given, else w = u.
//
// The pixels (N x spatial) are cut into a fixed number of slices whose
// partial sums are added in order, so the result does not depend on the
// thread count.  Inside a slice the walk follows the layout: each pixel's
// channels in a row where channels are contiguous (channels last), each
// channel's runs of pixels where they are (channel planes), with four
// lanes per run so that the additions do not wait on one another.  The
// partial sums are allocated at construction: compute() allocates nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "dispatcher/descriptor/canonical_layout.hpp"
#include "dispatcher/descriptor/dtype.hpp"

namespace convjit {

class ChannelSums {
 public:
  explicit ChannelSums(const View5& x);

  // x in `dtype`, g f32 or null, center one value per channel.
  void compute(DataType dtype, const void* x, const float* g, const double* center);

  [[nodiscard]] std::int64_t pixels() const { return pixels_; }  // values per channel
  [[nodiscard]] double first(std::int64_t c) const { return first_[static_cast<std::size_t>(c)]; }
  [[nodiscard]] double second(std::int64_t c) const {
    return second_[static_cast<std::size_t>(c)];
  }

 private:
  template <class T>
  void sum_slice(const T* x, const float* g, const double* center, std::int64_t slice);
  template <class T>
  void sum_pixel(const T* x, const float* g, const double* center, double* s1, double* s2) const;
  template <class T>
  void sum_run(const T* x, const float* g, std::int64_t length, double center, double& s1,
               double& s2) const;

  View5 x_;
  std::int64_t pixels_;                                 // N x spatial
  std::vector<double> first_partial_, second_partial_;  // [slice][channel]
  std::vector<double> first_, second_;
};

}  // namespace convjit
