// The one output-size rule, shared by convolution and pooling.
#pragma once

#include <cstdint>

namespace convjit {

enum class Rounding { floor, ceil };

struct WindowGeometry {
  std::int64_t input = 0;
  std::int64_t window = 1;
  std::int64_t pad_begin = 0;
  std::int64_t pad_end = 0;
  std::int64_t stride = 1;
  std::int64_t dilation = 1;

  // Extent of the dilated window: dilation * (window - 1) + 1.
  [[nodiscard]] std::int64_t extent() const { return dilation * (window - 1) + 1; }
};

// out = round((in + pad_begin + pad_end - extent) / stride) + 1.
// With ceil rounding the last window must start inside the input or the
// begin padding (PyTorch's and cuDNN's rule), so one output may be dropped.
// Returns 0 when not even one window fits or the parameters are invalid.
[[nodiscard]] std::int64_t output_size(const WindowGeometry& g, Rounding rounding);

}  // namespace convjit
