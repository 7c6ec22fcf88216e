// Test helper: runs an operation on random operands through a backend
// under test and through the host reference, and compares the outputs
// within the dtype's tolerance.  The output starts poisoned (all bits set:
// NaN in every float format), so an element the backend never writes is
// caught even where the value would happen to match.  The tolerance is
// kernel_tolerance() (tolerance.hpp), which says why.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "dispatcher/backends/reference/reference_backend.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/operand_layout.hpp"
#include "dispatcher/descriptor/tolerance.hpp"

namespace convjit::test {

// Host copies of one op's operands, in the descriptor's slots.
struct HostOperands {
  std::vector<unsigned char> x, w, dy, out;
  std::vector<unsigned char> bias, residual;  // a fused epilogue's, where it reads them
  double alpha = 1.0, beta = 0.0;

  // Exec arguments over these buffers (or copies of them), passing only
  // what the op reads, as the C API allows; `out` is the output to use.
  ExecArgs args(const OpDescriptor& d, void* output) const {
    ExecArgs a;
    a.x = reads_slot(d, Slot::x) ? x.data() : nullptr;
    a.w = reads_slot(d, Slot::w) ? w.data() : nullptr;
    a.dy = reads_slot(d, Slot::y) ? dy.data() : nullptr;
    a.out = output;
    a.bias = d.has_bias() ? bias.data() : nullptr;
    a.residual = d.has_residual() ? residual.data() : nullptr;
    a.alpha = alpha, a.beta = beta;
    return a;
  }
};

inline std::vector<unsigned char> random_bytes(DataType dtype, std::size_t bytes,
                                               std::mt19937& rng) {
  std::vector<unsigned char> v(bytes);
  std::uniform_real_distribution<double> dist(-1, 1);
  for (std::size_t i = 0; i < bytes / element_size(dtype); ++i)
    store_element(v.data(), i, dtype, dist(rng));
  return v;
}

// Random inputs; the output poisoned when beta is 0 (it must not be read),
// random otherwise (it is blended in).
inline HostOperands random_operands(const OpDescriptor& d, std::mt19937& rng, double alpha = 1.0,
                                    double beta = 0.0) {
  HostOperands o;
  o.x = random_bytes(d.dtype, slot_bytes(d, Slot::x), rng);
  o.w = random_bytes(d.dtype, slot_bytes(d, Slot::w), rng);
  o.dy = random_bytes(d.dtype, slot_bytes(d, Slot::y), rng);
  if (d.has_bias())
    o.bias = random_bytes(d.dtype, static_cast<std::size_t>(d.w_dims[0]) * element_size(d.dtype),
                          rng);
  if (d.has_residual()) o.residual = random_bytes(d.dtype, slot_bytes(d, Slot::y), rng);
  o.out = beta == 0.0 ? std::vector<unsigned char>(output_bytes(d), 0xff)
                      : random_bytes(d.dtype, output_bytes(d), rng);
  o.alpha = alpha, o.beta = beta;
  return o;
}

// The host reference's output for the operands.
inline std::vector<unsigned char> reference_output(const OpDescriptor& d, const HostOperands& o) {
  std::vector<unsigned char> out = o.out;
  run_reference(d, o.args(d, out.data()));
  return out;
}

// Compares `got` with the reference element by element.  Elements that are
// NaN in the poisoned output and in the reference are gaps of a strided
// output, which no one writes.  `rtol` 0 is kernel_tolerance(d).
inline void expect_matches_reference(const OpDescriptor& d, const HostOperands& o,
                                     const std::vector<unsigned char>& got, double rtol = 0) {
  SCOPED_TRACE(descriptor_name(d));
  const auto want = reference_output(d, o);
  if (rtol == 0) rtol = kernel_tolerance(d);
  for (std::size_t i = 0; i < got.size() / element_size(d.dtype); ++i) {
    const double expected = load_element(want.data(), i, d.dtype),
                 actual = load_element(got.data(), i, d.dtype);
    if (std::isnan(expected) && std::isnan(load_element(o.out.data(), i, d.dtype))) continue;
    ASSERT_FALSE(std::isnan(actual)) << "element " << i << " was not written";
    ASSERT_NEAR(actual, expected, rtol * (1 + std::abs(expected))) << "element " << i;
  }
}

}  // namespace convjit::test
