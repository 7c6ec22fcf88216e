// Test helper: one JIT variant of an op run in the host emulator on copies
// of host operands, every operand `shift` bytes off a 16-byte boundary (as
// a view into a larger tensor may be); returns the output, or nothing after
// reporting why the build or the launch failed.
#pragma once

#include <gtest/gtest.h>

#include <random>
#include <string_view>
#include <vector>

#include "dispatcher/backends/emulator/emulator_backend.hpp"
#include "dispatcher/backends/jit/kernel_variants.hpp"
#include "dispatcher/descriptor/tolerance.hpp"
#include "support/reference_comparison.hpp"
#include "support/shifted_buffer.hpp"

namespace convjit::test {

// f32 on tensor cores is TF32 (tf32_tolerance); the rest keep their
// dtype's tolerance, since f16 and bf16 products are exact in f32.
inline double variant_tolerance(const OpDescriptor& d, std::string_view variant) {
  const GemmTile* tile = find_gemm_tile(variant);
  if (d.dtype == DataType::f32 && tile != nullptr && tile->math == GemmMath::tensor_core)
    return tf32_tolerance(reduction_length(d));
  return kernel_tolerance(d);
}

inline std::vector<unsigned char> run_emulated_variant(EmulatorBackend& backend,
                                                       const OpDescriptor& d,
                                                       const HostOperands& host,
                                                       std::string_view variant,
                                                       std::size_t shift = 0) {
  BuildTrace trace;
  auto kernel = backend.build_variant(d, {CONVJIT_DEVICE_HOST, 0}, variant, trace);
  EXPECT_TRUE(kernel.is_ok()) << kernel.status().message();
  if (!kernel.is_ok()) return {};
  const ShiftedBuffer x(host.x, shift), dy(host.dy, shift);
  ShiftedBuffer out(host.out, shift);
  ExecArgs args = host.args(d, out.data());
  if (args.x != nullptr) args.x = x.data();
  if (args.dy != nullptr) args.dy = dy.data();
  const Status s = kernel.value()->execute(args);
  EXPECT_TRUE(s.is_ok()) << s.message();
  return out.bytes();
}

// `variant` of `d` in the emulator on random operands against the
// reference, at the dtype's tolerance; a fused epilogue's bias and
// residual `epilogue_shift` bytes off a 16-byte boundary.
inline void expect_emulated_variant_matches(const OpDescriptor& d, std::mt19937& rng,
                                            std::string_view variant, double alpha, double beta,
                                            std::size_t epilogue_shift = 0) {
  EmulatorBackend backend;
  BuildTrace trace;
  auto kernel = backend.build_variant(d, {CONVJIT_DEVICE_HOST, 0}, variant, trace);
  ASSERT_TRUE(kernel.is_ok()) << kernel.status().message();
  const HostOperands host = random_operands(d, rng, alpha, beta);
  const ShiftedBuffer bias(host.bias, epilogue_shift), residual(host.residual, epilogue_shift);
  std::vector<unsigned char> out = host.out;
  ExecArgs args = host.args(d, out.data());
  if (args.bias != nullptr) args.bias = bias.data();
  if (args.residual != nullptr) args.residual = residual.data();
  const Status s = kernel.value()->execute(args);
  ASSERT_TRUE(s.is_ok()) << s.message();
  expect_matches_reference(d, host, out, kernel_tolerance(d));
}

}  // namespace convjit::test
