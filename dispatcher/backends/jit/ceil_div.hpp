#pragma once

namespace convjit {

// How many tiles (blocks, slices) of b cover a: the launch-size arithmetic
// of the JIT's variants, once for all of them.
constexpr long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

}  // namespace convjit
