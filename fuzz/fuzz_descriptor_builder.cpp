// libFuzzer target: the validation behind every C API call.  The C API
// hands its callers' structs (tensor descriptors, conv and pool params) to
// the descriptor builder unchanged; here they hold arbitrary bytes, enum
// fields included, and any pointer may be NULL.
//
// Properties: no crash, no sanitizer finding (UBSan reports any enum load
// or overflow), a refusal always says why, and an accepted op is valid and
// survives its own name.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "convjit/convjit.h"
#include "dispatcher/descriptor/descriptor_builder.hpp"
#include "dispatcher/descriptor/descriptor_name.hpp"
#include "dispatcher/descriptor/descriptor_validation.hpp"

namespace {

using namespace convjit;

void require(bool condition) {
  if (!condition) std::abort();
}

// Mostly small values, so that valid problems are found, now and then any.
std::int64_t small_or_any(FuzzedDataProvider& in) {
  switch (in.ConsumeIntegralInRange(0, 7)) {
    case 0:
      return in.ConsumeIntegral<std::int64_t>();
    case 1:
      return in.ConsumeIntegralInRange<std::int64_t>(-2, 0);
    default:
      return in.ConsumeIntegralInRange<std::int64_t>(0, 12);
  }
}

template <class T>
void fill_raw(FuzzedDataProvider& in, T& value) {
  in.ConsumeData(&value, sizeof value);  // enum fields too: any int
}

convjit_tensor_desc_t tensor(FuzzedDataProvider& in) {
  convjit_tensor_desc_t t;
  fill_raw(in, t.dtype);
  if (in.ConsumeBool()) t.dtype = CONVJIT_DTYPE_F32;
  t.rank = in.ConsumeIntegralInRange(2, 6);
  for (int i = 0; i < CONVJIT_MAX_RANK; ++i) t.dims[i] = small_or_any(in);
  for (int i = 0; i < CONVJIT_MAX_RANK; ++i) t.strides[i] = small_or_any(in);
  return t;
}

template <class Params>
void spatial(FuzzedDataProvider& in, Params& p) {
  p.spatial_dims = in.ConsumeIntegralInRange(0, 4);
  for (int i = 0; i < 3; ++i) {
    p.pad_begin[i] = small_or_any(in);
    p.pad_end[i] = small_or_any(in);
    p.stride[i] = small_or_any(in);
    p.dilation[i] = small_or_any(in);
  }
}

void check(const Result<OpDescriptor>& built) {
  if (!built.is_ok()) {
    require(!built.status().message().empty());
    return;
  }
  require(validate_descriptor(built.value()).is_ok());
  const auto reparsed = parse_descriptor_name(descriptor_name(built.value()));
  require(reparsed.is_ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  convjit_tensor_desc_t x = tensor(in), w = tensor(in), y = tensor(in);
  // Each pointer is NULL now and then (issue 15, item 1: a NULL x crashed).
  const bool has_x = in.ConsumeIntegralInRange(0, 9) != 0;
  const bool has_w = in.ConsumeIntegralInRange(0, 9) != 0;
  const bool has_y = in.ConsumeBool(), has_params = in.ConsumeIntegralInRange(0, 9) != 0;
  switch (in.ConsumeIntegralInRange(0, 2)) {
    case 0: {
      convjit_conv_params_t p;
      spatial(in, p);
      p.groups = small_or_any(in);
      const Direction direction =
          in.PickValueInArray({Direction::fwd, Direction::bwddata, Direction::bwdfilt});
      check(make_conv_descriptor(has_params ? &p : nullptr, direction, has_x ? &x : nullptr,
                                 has_w ? &w : nullptr, has_y ? &y : nullptr));
      break;
    }
    case 1: {
      convjit_pool_params_t p;
      spatial(in, p);
      fill_raw(in, p.mode);
      if (in.ConsumeBool()) p.mode = CONVJIT_POOL_MAX;
      for (int i = 0; i < 3; ++i) p.window[i] = small_or_any(in);
      const Direction direction = in.ConsumeBool() ? Direction::fwd : Direction::bwd;
      check(make_pool_descriptor(has_params ? &p : nullptr, direction, has_x ? &x : nullptr,
                                 has_y ? &y : nullptr, in.ConsumeBool()));
      break;
    }
    default:
      check(make_bias_grad_descriptor(has_y ? &y : nullptr));
  }
  return 0;
}
