// What a kernel template sees when the host emulator compiles it: CUDA's
// qualifiers, built-in variables, barriers, shared memory, atomics and
// intrinsics, and bounds-checked storage for CONVJIT_DTYPE.  Included by
// the generated emulated_<template>_<dtype>.cpp files only, which then
// include the template inside a namespace of their own.
//
// The unprefixed macros below are CUDA's own names: defining them is the
// point of an emulator.
#pragma once

#ifndef CONVJIT_DTYPE
#error "define CONVJIT_DTYPE (0 f32, 1 f16, 2 bf16) before including device_runtime.hpp"
#endif

#include <atomic>
#include <bit>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "dispatcher/backends/emulator/block_scheduler.hpp"
#include "dispatcher/backends/emulator/emulated_buffers.hpp"
#include "dispatcher/backends/emulator/emulated_template.hpp"
#include "dispatcher/backends/emulator/launch_context.hpp"
#include "dispatcher/backends/emulator/problem_binding.hpp"
#include "dispatcher/descriptor/half_precision.hpp"

#define CONVJIT_EMULATOR 1
#define CONVJIT_KERNEL void
#define CONVJIT_SHARED_ARRAY(type, name, count) \
  const ::convjit::emulated::SharedArray<type> name(#name, __LINE__, count)
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __syncthreads() ::convjit::emulator::block_barrier(__LINE__)

namespace convjit::emulated {

inline bool check_global(const void* address, std::size_t bytes, emulator::Access access) {
  return emulator::launch_context().buffers->check(address, bytes, access);
}

// What a refused read returns: all bits set, NaN in every float format.
template <class T>
T poison() {
  T value;
  std::memset(&value, 0xff, sizeof value);
  return value;
}

// ---- global memory ----------------------------------------------------------

// A tensor element in its storage format.  Only load() and store() touch
// it, as on the GPU where storage_t is a bare 16- or 32-bit value.
template <class Bits>
class GlobalElement {
 public:
  // What store() returns: converted bits, waiting to be written.
  struct Converted {
    Bits bits;
  };

  GlobalElement() = default;
  GlobalElement(const GlobalElement&) = delete;
  GlobalElement& operator=(const GlobalElement&) = delete;

  GlobalElement& operator=(Converted value) {
    if (check_global(this, sizeof(Bits), emulator::Access::write)) bits_ = value.bits;
    return *this;
  }
  // atomicAdd on an f32 element.
  Bits atomic_add(Bits value) requires std::is_floating_point_v<Bits> {
    if (!check_global(this, sizeof(Bits), emulator::Access::atomic)) return poison<Bits>();
    return std::atomic_ref<Bits>(bits_).fetch_add(value);
  }
  [[nodiscard]] Bits bits() const {
    return check_global(this, sizeof(Bits), emulator::Access::read) ? bits_ : poison<Bits>();
  }

 private:
  Bits bits_;
};

// A workspace element: an f32 element used like a float, as the GPU's
// float* workspace is.
class EmulatedScratch : public GlobalElement<float> {
 public:
  operator float() const { return bits(); }
  EmulatedScratch& operator=(float value) {
    GlobalElement::operator=(Converted{value});
    return *this;
  }
  EmulatedScratch& operator=(const EmulatedScratch& other) {
    return *this = static_cast<float>(other);
  }
  EmulatedScratch& operator+=(float value) { return *this = static_cast<float>(*this) + value; }
};

// load() and store() differ by dtype with one signature (f16 and bf16 share
// their bits type): an inline namespace per dtype keeps the generated
// files' definitions apart.
#if CONVJIT_DTYPE == 0
inline namespace f32 {
using EmulatedStorage = GlobalElement<float>;
inline float load(const EmulatedStorage& v) { return v.bits(); }
inline EmulatedStorage::Converted store(float v) { return {v}; }
inline float atomicAdd(EmulatedStorage* address, float value) { return address->atomic_add(value); }
}  // namespace f32
#elif CONVJIT_DTYPE == 1
inline namespace f16 {
using EmulatedStorage = GlobalElement<std::uint16_t>;
// half_precision.hpp rounds to nearest even, as cvt.rn.f16.f32 does.
inline float load(const EmulatedStorage& v) { return half_to_float(Half{v.bits()}); }
inline EmulatedStorage::Converted store(float v) { return {float_to_half(v).bits}; }
}  // namespace f16
#elif CONVJIT_DTYPE == 2
inline namespace bf16 {
using EmulatedStorage = GlobalElement<std::uint16_t>;
inline float load(const EmulatedStorage& v) { return bf16_to_float(BFloat16{v.bits()}); }
inline EmulatedStorage::Converted store(float v) { return {float_to_bf16(v).bits}; }
}  // namespace bf16
#else
#error "CONVJIT_DTYPE must be 0 (f32), 1 (f16) or 2 (bf16)"
#endif

// ---- shared memory -----------------------------------------------------------

template <class T>
class SharedAddress {
 public:
  SharedAddress(emulator::SharedRegion* region, long long index) : region_(region), index_(index) {}
  [[nodiscard]] T* atomic_element() const {
    return static_cast<T*>(region_->element(index_, emulator::Access::atomic));
  }

 private:
  emulator::SharedRegion* region_;
  long long index_;
};

// An element of a shared array; every read and write goes through the
// block's race and bounds checks.
template <class T>
class SharedRef {
 public:
  SharedRef(emulator::SharedRegion* region, long long index) : region_(region), index_(index) {}

  operator T() const {
    const void* p = region_->element(index_, emulator::Access::read);
    if (p == nullptr) return poison<T>();
    T value;
    std::memcpy(&value, p, sizeof value);
    return value;
  }
  SharedRef& operator=(T value) {
    if (void* p = region_->element(index_, emulator::Access::write))
      std::memcpy(p, &value, sizeof value);
    return *this;
  }
  SharedRef& operator=(const SharedRef& other) { return *this = static_cast<T>(other); }
  SharedRef& operator+=(T value) { return *this = static_cast<T>(*this) + value; }
  SharedRef& operator-=(T value) { return *this = static_cast<T>(*this) - value; }
  SharedRef& operator*=(T value) { return *this = static_cast<T>(*this) * value; }
  SharedAddress<T> operator&() const { return {region_, index_}; }

 private:
  emulator::SharedRegion* region_;
  long long index_;
};

// What CONVJIT_SHARED_ARRAY declares: a handle on the block's array.
template <class T>
class SharedArray {
 public:
  SharedArray(const char* name, int line, long long count)
      : region_(&emulator::BlockScheduler::current().shared_region(name, line, count, sizeof(T))) {}
  SharedRef<T> operator[](long long index) const { return {region_, index}; }

 private:
  emulator::SharedRegion* region_;
};

// ---- atomics and intrinsics -----------------------------------------------------

inline float atomicAdd(EmulatedScratch* address, float value) { return address->atomic_add(value); }

// A block's fibers share one host thread, so a shared atomic is a plain
// read-modify-write.
template <class T>
T atomicAdd(SharedAddress<T> address, T value) {
  T* p = address.atomic_element();
  if (p == nullptr) return T{};
  const T old = *p;
  *p = old + value;
  return old;
}

inline float __int_as_float(int bits) { return std::bit_cast<float>(bits); }
inline int __float_as_int(float value) { return std::bit_cast<int>(value); }

// A template without a second pass leaves convjit_kernel_finish to this.
inline constexpr std::nullptr_t convjit_kernel_finish = nullptr;

}  // namespace convjit::emulated
