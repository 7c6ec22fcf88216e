// A training batchnorm's per-channel mean and biased variance, summed on
// the host in f64 for the onednn backend: oneDNN 2.6's own f32 statistics
// were 25 times less accurate than f32 PyTorch's on YOLO11n's first layer
// (51200 values per channel), and every later gradient inherits them.
//
// One pass over x sums d = x - x0 and d^2 per channel (x0 the channel's
// first value: a shift that keeps the variance's cancellation small), in
// ChannelSums' fixed slices: the result does not depend on the thread
// count, and compute() allocates nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "dispatcher/backends/onednn/channel_sums.hpp"
#include "dispatcher/descriptor/canonical_layout.hpp"
#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit {

class BatchStatistics {
 public:
  explicit BatchStatistics(const OpDescriptor& desc);

  // The statistics of x (desc's dtype and layout); NaN in a channel whose
  // values hold one.
  void compute(const void* x);

  [[nodiscard]] double mean(std::int64_t c) const { return mean_[static_cast<std::size_t>(c)]; }
  [[nodiscard]] double variance(std::int64_t c) const {
    return variance_[static_cast<std::size_t>(c)];
  }

 private:
  DataType dtype_;
  View5 x_;
  std::vector<double> shift_;  // x0 per channel
  ChannelSums sums_;
  std::vector<double> mean_, variance_;
};

}  // namespace convjit
