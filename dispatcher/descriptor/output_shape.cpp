#include "dispatcher/descriptor/output_shape.hpp"

namespace convjit {

std::int64_t output_size(const WindowGeometry& g, Rounding rounding) {
  if (g.stride < 1 || g.dilation < 1 || g.window < 1) return 0;  // invalid; validation says why
  // Unvalidated sizes may come here (to derive a shape); overflow gives 0.
  std::int64_t extent = 0, padded = 0, span = 0;
  if (__builtin_mul_overflow(g.dilation, g.window - 1, &extent) ||
      __builtin_add_overflow(extent, 1, &extent) ||
      __builtin_add_overflow(g.input, g.pad_begin, &padded) ||
      __builtin_add_overflow(padded, g.pad_end, &padded) ||
      __builtin_sub_overflow(padded, extent, &span))
    return 0;
  if (span < 0) return 0;
  if (rounding == Rounding::floor) return span / g.stride + 1;
  std::int64_t out = span / g.stride + (span % g.stride != 0) + 1;
  std::int64_t last_start = 0;
  if (__builtin_mul_overflow(out - 1, g.stride, &last_start) || last_start >= padded - g.pad_end)
    --out;  // padded - pad_end = input + pad_begin
  return out;
}

}  // namespace convjit
