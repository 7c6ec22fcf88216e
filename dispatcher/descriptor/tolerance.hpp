// How far a kernel's output may stray from the host reference, relative
// to (1 + |reference|).  The reference accumulates in f64 and rounds once;
// kernels accumulate in f32 in another order.
//   f32: 1e-4 covers f32 accumulation over the reductions convjit verifies
//        (thousands of terms of magnitude <= 1).
//   f16, bf16: 8 units of the format's half-ulp (2^-11, 2^-8): one rounding
//        of the stored result dominates, the inputs being the same stored
//        values, and f32 accumulation adds far less.
#pragma once

#include <cmath>

#include "dispatcher/descriptor/dtype.hpp"

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
// The f32 accumulation's 1e-4 comes on top.
[[nodiscard]] inline double tf32_tolerance(long long length) {
  return 0x1p-10 * std::sqrt(static_cast<double>(length)) + 1e-4;
}

}  // namespace convjit
