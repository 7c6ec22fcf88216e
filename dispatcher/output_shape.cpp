#include "output_shape.hpp"

namespace convjit {

std::int64_t output_size(const WindowGeometry& g, Rounding rounding) {
  if (g.stride < 1 || g.dilation < 1 || g.window < 1) return 0;  // invalid; validation says why
  const std::int64_t span = g.input + g.pad_begin + g.pad_end - g.extent();
  if (span < 0) return 0;
  if (rounding == Rounding::floor) return span / g.stride + 1;
  std::int64_t out = (span + g.stride - 1) / g.stride + 1;
  if ((out - 1) * g.stride >= g.input + g.pad_begin) --out;
  return out;
}

}  // namespace convjit
