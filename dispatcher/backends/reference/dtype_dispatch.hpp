// Calls f.template operator()<T>() with the storage type of a DataType.
#pragma once

#include "dispatcher/descriptor/dtype.hpp"
#include "dispatcher/descriptor/half_precision.hpp"

namespace convjit::reference {

template <class F>
void dispatch_dtype(DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::f32:
      f.template operator()<float>();
      return;
    case DataType::f64:
      f.template operator()<double>();
      return;
    case DataType::f16:
      f.template operator()<Half>();
      return;
    case DataType::bf16:
      f.template operator()<BFloat16>();
      return;
  }
}

}  // namespace convjit::reference
