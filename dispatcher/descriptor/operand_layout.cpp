#include "dispatcher/descriptor/operand_layout.hpp"

#include <algorithm>
#include <cstring>

#include "dispatcher/descriptor/half_precision.hpp"

namespace convjit {

namespace {

std::size_t span(const Dims5& dims, const Dims5& strides, int rank, DataType dtype) {
  std::int64_t last = 0;
  for (std::size_t i = 0; i < static_cast<std::size_t>(rank); ++i)
    last += (std::max<std::int64_t>(dims[i], 1) - 1) * strides[i];
  return static_cast<std::size_t>(last + 1) * element_size(dtype);
}

}  // namespace

Slot output_slot(const OpDescriptor& d) {
  if (d.direction == Direction::bwddata || (d.kind != OpKind::bias_grad && d.direction == Direction::bwd))
    return Slot::x;
  if (d.direction == Direction::bwdfilt) return Slot::w;
  return Slot::y;
}

bool reads_slot(const OpDescriptor& d, Slot slot) {
  switch (slot) {
    case Slot::x:
      if (d.kind == OpKind::bias_grad || d.direction == Direction::bwddata) return false;
      if (d.is_resize()) return d.direction == Direction::fwd;
      return !(d.is_pool() && d.direction == Direction::bwd && d.pool_mode != PoolingMode::max);
    case Slot::w:
      return d.is_conv() && d.direction != Direction::bwdfilt;
    case Slot::y:
      return d.direction != Direction::fwd;  // as dy
  }
  return false;
}

const Dims5& slot_dims(const OpDescriptor& d, Slot slot) {
  return slot == Slot::x ? d.x_dims : slot == Slot::w ? d.w_dims : d.y_dims;
}

const Dims5& slot_strides(const OpDescriptor& d, Slot slot) {
  return slot == Slot::x ? d.x_strides : slot == Slot::w ? d.w_strides : d.y_strides;
}

std::size_t slot_bytes(const OpDescriptor& d, Slot slot) {
  const bool present =
      slot == Slot::x ? d.kind != OpKind::bias_grad : slot == Slot::y || d.is_conv();
  return present ? span(slot_dims(d, slot), slot_strides(d, slot), d.rank(), d.dtype) : 0;
}

std::size_t output_bytes(const OpDescriptor& d) {
  if (d.kind == OpKind::bias_grad)
    return static_cast<std::size_t>(d.y_dims[1]) * element_size(d.dtype);
  return slot_bytes(d, output_slot(d));
}

double load_element(const void* data, std::size_t index, DataType dtype) {
  const auto* bytes = static_cast<const unsigned char*>(data) + index * element_size(dtype);
  switch (dtype) {
    case DataType::f32: {
      float v;
      std::memcpy(&v, bytes, 4);
      return v;
    }
    case DataType::f64: {
      double v;
      std::memcpy(&v, bytes, 8);
      return v;
    }
    case DataType::f16: {
      Half h;
      std::memcpy(&h.bits, bytes, 2);
      return half_to_float(h);
    }
    case DataType::bf16: {
      BFloat16 b;
      std::memcpy(&b.bits, bytes, 2);
      return bf16_to_float(b);
    }
  }
  return 0;
}

void store_element(void* data, std::size_t index, DataType dtype, double value) {
  auto* bytes = static_cast<unsigned char*>(data) + index * element_size(dtype);
  const auto f = static_cast<float>(value);
  switch (dtype) {
    case DataType::f32:
      std::memcpy(bytes, &f, 4);
      return;
    case DataType::f64:
      std::memcpy(bytes, &value, 8);
      return;
    case DataType::f16: {
      const Half h = float_to_half(f);
      std::memcpy(bytes, &h.bits, 2);
      return;
    }
    case DataType::bf16: {
      const BFloat16 b = float_to_bf16(f);
      std::memcpy(bytes, &b.bits, 2);
      return;
    }
  }
}

}  // namespace convjit
