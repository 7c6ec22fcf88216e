// How far a kernel's output may stray from the host reference, relative
// to (1 + |reference|).  The reference accumulates in f64 and rounds once;
// kernels accumulate in f32 in another order.
//   f32: 1e-4 covers f32 accumulation over a few thousand terms of
//        magnitude <= 1; longer reductions widen it (f32_tolerance).
//   f16, bf16: 8 units of the format's half-ulp (2^-11, 2^-8): one rounding
//        of the stored result dominates, the inputs being the same stored
//        values, and f32 accumulation adds far less.
#pragma once

#include <cmath>

#include "dispatcher/descriptor/dtype.hpp"
#include "dispatcher/descriptor/op_descriptor.hpp"

namespace convjit {

[[nodiscard]] constexpr double kernel_tolerance(DataType dtype) {
  switch (dtype) {
    case DataType::f16:
      return 8 * 0x1p-11;
    case DataType::bf16:
      return 8 * 0x1p-8;
    case DataType::f64:
      return 1e-12;
    case DataType::f32:
      break;
  }
  return 1e-4;
}

// f32 on TF32 tensor cores (CONVJIT_ALLOW_TF32=1), for a reduction of
// `length` products of operands of magnitude <= 1.  Rounding both
// operands to TF32's 10-bit mantissa (cvt.rna, relative error <= 2^-11
// each) errs by at most 2^-10 per product; those errors are independent
// with a spread of about 0.2 * 2^-10 for uniform operands, so their sum
// stays within 2^-10 sqrt(length) (five spreads) in every case we draw.
// The f32 accumulation's (f32_tolerance) comes on top.
[[nodiscard]] double tf32_tolerance(long long length);

// f32 accumulation over `length` products of operands of magnitude <= 1
// (uniform, as the tests draw them), in any order: the partial sums after
// k terms spread about sqrt(k)/3, each addition rounds by at most 2^-24 of
// its sum, and those independent errors add up to a spread of about
// 2^-24 length / 7; five spreads stay under 0.7 * 2^-24 length.  Seen
// needed: cuDNN's f32 bwdfilt over CosmoFlow's 65,536 outputs per weight
// erred by 1.3e-4 on an H200 (bench/results/2026-11-26-h200).
[[nodiscard]] inline double f32_tolerance(long long length) {
  return 1e-4 + 0.7 * 0x1p-24 * static_cast<double>(length);
}

// The most products or terms any one output element sums: a conv's GEMM
// reduction (for bwddata, a stride phase's bound: every tap), a bias
// gradient's N x spatial outputs, a pool's window; 1 for what sums nothing.
[[nodiscard]] long long reduction_length(const OpDescriptor& d);

// kernel_tolerance(d.dtype), widened for f32 by d's reduction length.
[[nodiscard]] double kernel_tolerance(const OpDescriptor& d);

}  // namespace convjit
