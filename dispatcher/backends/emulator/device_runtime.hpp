// What a kernel template sees when the host emulator compiles it: CUDA's
// qualifiers, built-in variables, barriers, shared memory, atomics and
// intrinsics, warp collectives, and bounds-checked storage for
// CONVJIT_DTYPE; plus the emulator's side of the device wrappers in
// kernel_templates/common/ (vector memory, cp.async, ldmatrix, mma,
// mbarrier, TMA, wgmma, clusters).  Included by the generated emulated_<template>_<dtype>.cpp
// files only, which then include the template inside a namespace of their
// own.
//
// The unprefixed macros below are CUDA's own names: defining them is the
// point of an emulator.
#pragma once

#ifndef CONVJIT_DTYPE
#error "define CONVJIT_DTYPE (0 f32, 1 f16, 2 bf16) before including device_runtime.hpp"
#endif

#include <fmt/format.h>

#include <atomic>
#include <bit>
#include <cstdint>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "dispatcher/backends/emulator/block_scheduler.hpp"
#include "dispatcher/backends/emulator/emulated_buffers.hpp"
#include "dispatcher/backends/emulator/emulated_template.hpp"
#include "dispatcher/backends/emulator/launch_context.hpp"
#include "dispatcher/backends/emulator/problem_binding.hpp"
#include "dispatcher/backends/emulator/warp_collective.hpp"
#include "dispatcher/backends/emulator/warp_operations.hpp"
#include "dispatcher/descriptor/half_precision.hpp"

#define CONVJIT_EMULATOR 1
#define CONVJIT_KERNEL void
#define CONVJIT_KERNEL_BOUNDED(threads, min_blocks) void
#define CONVJIT_SHARED_ARRAY(type, name, count) \
  const ::convjit::emulated::SharedArray<type> name(#name, __LINE__, count)
#define CONVJIT_SHARED_ARRAY_ALIGNED(type, name, count, alignment) \
  const ::convjit::emulated::SharedArray<type> name(#name, __LINE__, count, alignment)
#define CONVJIT_DYNAMIC_SHARED_ARRAY(type, name) \
  const ::convjit::emulated::SharedArray<type> name(::convjit::emulated::kDynamicShared, #name, \
                                                     __LINE__)
#define CONVJIT_GRID_CONSTANT
#define CONVJIT_IF_CONSTANT if
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __syncthreads() ::convjit::emulator::block_barrier(__LINE__)
#define __syncwarp(...) ::convjit::emulated::syncwarp(__LINE__ __VA_OPT__(, ) __VA_ARGS__)
#define __shfl_sync(...) \
  ::convjit::emulated::shuffle(__LINE__, ::convjit::emulator::ShuffleMode::idx, __VA_ARGS__)
#define __shfl_up_sync(...) \
  ::convjit::emulated::shuffle(__LINE__, ::convjit::emulator::ShuffleMode::up, __VA_ARGS__)
#define __shfl_down_sync(...) \
  ::convjit::emulated::shuffle(__LINE__, ::convjit::emulator::ShuffleMode::down, __VA_ARGS__)
#define __shfl_xor_sync(...) \
  ::convjit::emulated::shuffle(__LINE__, ::convjit::emulator::ShuffleMode::bfly, __VA_ARGS__)
#define __ballot_sync(...) ::convjit::emulated::ballot_sync(__LINE__, __VA_ARGS__)
#define __any_sync(...) ::convjit::emulated::any_sync(__LINE__, __VA_ARGS__)
#define __all_sync(...) ::convjit::emulated::all_sync(__LINE__, __VA_ARGS__)

namespace convjit::emulated {

inline emulator::MemoryOp memory_op(emulator::Access access) {
  switch (access) {
    case emulator::Access::read:
      return emulator::MemoryOp::load;
    case emulator::Access::write:
      return emulator::MemoryOp::store;
    case emulator::Access::atomic:
      break;
  }
  return emulator::MemoryOp::atomic;
}

inline bool check_global(const void* address, std::size_t bytes, emulator::Access access) {
  emulator::note_global_access(address, bytes, memory_op(access));
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
  // For accesses of several elements at once, checked by the caller.
  [[nodiscard]] Bits unchecked_bits() const { return bits_; }
  void unchecked_set(Bits value) { bits_ = value; }
  using bits_type = Bits;

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
inline unsigned storage_bits(const EmulatedStorage& v) { return std::bit_cast<unsigned>(v.bits()); }
inline float atomicAdd(EmulatedStorage* address, float value) { return address->atomic_add(value); }
inline float value_of_bits(unsigned bits) { return std::bit_cast<float>(bits); }
inline unsigned bits_of_value(float v) { return std::bit_cast<unsigned>(v); }
}  // namespace f32
#elif CONVJIT_DTYPE == 1
inline namespace f16 {
using EmulatedStorage = GlobalElement<std::uint16_t>;
// half_precision.hpp rounds to nearest even, as cvt.rn.f16.f32 does.
inline float load(const EmulatedStorage& v) { return half_to_float(Half{v.bits()}); }
inline EmulatedStorage::Converted store(float v) { return {float_to_half(v).bits}; }
inline unsigned storage_bits(const EmulatedStorage& v) { return v.bits(); }
inline float value_of_bits(unsigned bits) {
  return half_to_float(Half{static_cast<std::uint16_t>(bits)});
}
inline unsigned bits_of_value(float v) { return float_to_half(v).bits; }
}  // namespace f16
#elif CONVJIT_DTYPE == 2
inline namespace bf16 {
using EmulatedStorage = GlobalElement<std::uint16_t>;
inline float load(const EmulatedStorage& v) { return bf16_to_float(BFloat16{v.bits()}); }
inline EmulatedStorage::Converted store(float v) { return {float_to_bf16(v).bits}; }
inline unsigned storage_bits(const EmulatedStorage& v) { return v.bits(); }
inline float value_of_bits(unsigned bits) {
  return bf16_to_float(BFloat16{static_cast<std::uint16_t>(bits)});
}
inline unsigned bits_of_value(float v) { return float_to_bf16(v).bits; }
}  // namespace bf16
#else
#error "CONVJIT_DTYPE must be 0 (f32), 1 (f16) or 2 (bf16)"
#endif

// ---- shared memory -----------------------------------------------------------

template <class T>
class SharedRef;

// What &shared[i] gives: the array and the index, which every access
// through it checks.
template <class T>
class SharedAddress {
 public:
  SharedAddress(emulator::SharedRegion* region, long long index) : region_(region), index_(index) {}
  [[nodiscard]] T* atomic_element() const {
    return static_cast<T*>(region_->element(index_, emulator::Access::atomic));
  }
  [[nodiscard]] emulator::SharedRegion& region() const { return *region_; }
  [[nodiscard]] long long index() const { return index_; }
  SharedAddress operator+(long long offset) const { return {region_, index_ + offset}; }
  SharedRef<T> operator[](long long offset) const { return {region_, index_ + offset}; }

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
    emulator::note_shared_access(*region_, index_, sizeof(T), emulator::MemoryOp::load);
    const void* p = region_->element(index_, emulator::Access::read);
    if (p == nullptr) return poison<T>();
    T value;
    std::memcpy(&value, p, sizeof value);
    return value;
  }
  SharedRef& operator=(T value) {
    emulator::note_shared_access(*region_, index_, sizeof(T), emulator::MemoryOp::store);
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

// The tag of CONVJIT_DYNAMIC_SHARED_ARRAY's constructor.
struct DynamicShared {};
inline constexpr DynamicShared kDynamicShared{};

// The elements of T the launch's dynamic shared memory holds (reported
// when it holds none, or not a whole number).
template <class T>
long long dynamic_shared_count(const char* name) {
  const std::size_t bytes = emulator::launch_context().dynamic_shared_bytes;
  if (bytes == 0 || bytes % sizeof(T) != 0)
    emulator::report_violation(fmt::format(
        "declares CONVJIT_DYNAMIC_SHARED_ARRAY {} of {}-byte elements, but the launch gives {} "
        "bytes of dynamic shared memory (KernelEntry::dynamic_shared_bytes)",
        name, sizeof(T), bytes));
  return static_cast<long long>(bytes / sizeof(T));
}

// What CONVJIT_SHARED_ARRAY declares: a handle on the block's array.
template <class T>
class SharedArray {
 public:
  SharedArray(const char* name, int line, long long count, std::size_t alignment = 16)
      : region_(&emulator::BlockScheduler::current().shared_region(name, line, count, sizeof(T),
                                                                   alignment)) {}
  // The launch's dynamic shared memory, 1024-byte aligned as the GPU's
  // declaration asks (kernel_abi.cuh).
  SharedArray(DynamicShared, const char* name, int line)
      : region_(&emulator::BlockScheduler::current().shared_region(
            name, line, dynamic_shared_count<T>(name), sizeof(T), 1024, true)) {}
  SharedRef<T> operator[](long long index) const { return {region_, index}; }

 private:
  emulator::SharedRegion* region_;
};

// ---- atomics and intrinsics -----------------------------------------------------

inline float atomicAdd(EmulatedScratch* address, float value) { return address->atomic_add(value); }

// common/arrival_counter.cuh: the count, and the order it gives the race
// checker.
inline bool arrives_last_on(EmulatedScratch* counter, long long arrivals) {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  const float before = emulator::launch_context().buffers->arrive(
      counter, [counter] { return counter->atomic_add(1.0f); });
  return emulator::launch_context().sampled || before == static_cast<float>(arrivals - 1);
}

// A block's fibers share one host thread, so a shared atomic is a plain
// read-modify-write.
template <class T>
T atomicAdd(SharedAddress<T> address, T value) {
  emulator::note_shared_access(address.region(), address.index(), sizeof(T),
                               emulator::MemoryOp::atomic);
  T* p = address.atomic_element();
  if (p == nullptr) return T{};
  const T old = *p;
  *p = old + value;
  return old;
}

// Blocks run on several host threads: the fence orders a block's global
// writes before its later atomics, as __threadfence() does on the GPU.
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }

// The GPU's f32 arithmetic, rounded once per operation: host f32 math is
// (no FMA contraction on the x86-64 baseline).
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }

inline float __int_as_float(int bits) { return std::bit_cast<float>(bits); }
inline int __float_as_int(float value) { return std::bit_cast<int>(value); }
inline float __uint_as_float(unsigned bits) { return std::bit_cast<float>(bits); }
inline unsigned __float_as_uint(float value) { return std::bit_cast<unsigned>(value); }

// ---- warp collectives ---------------------------------------------------------------

template <class T>
T shuffle(int line, emulator::ShuffleMode mode, unsigned mask, T var, int b, int width = 32) {
  static_assert(sizeof(T) == 4 || sizeof(T) == 8, "shuffles move 32- or 64-bit values");
  emulator::ShufflePayload p{mode, b, width};
  std::memcpy(&p.value, &var, sizeof var);
  if (width < 1 || width > 32 || (width & (width - 1)) != 0) {
    emulator::report_violation(fmt::format("calls {} (line {}) with width {}, not a power of two "
                                           "from 1 to 32",
                                           emulator::shuffle_name(mode), line, width));
    p.width = 32;
  }
  emulator::WarpArrival arrival{emulator::shuffle_name(mode), line, mask,
                                &emulator::complete_shuffle, &p};
  emulator::warp_collective(arrival);
  T result;
  std::memcpy(&result, &p.result, sizeof result);
  return result;
}

inline emulator::VotePayload vote(const char* name, int line, unsigned mask, bool predicate) {
  emulator::VotePayload p{predicate};
  emulator::WarpArrival arrival{name, line, mask, &emulator::complete_vote, &p};
  emulator::warp_collective(arrival);
  return p;
}
inline unsigned ballot_sync(int line, unsigned mask, int predicate) {
  return vote("__ballot_sync", line, mask, predicate != 0).ballot;
}
inline int any_sync(int line, unsigned mask, int predicate) {
  return vote("__any_sync", line, mask, predicate != 0).ballot != 0;
}
inline int all_sync(int line, unsigned mask, int predicate) {
  const emulator::VotePayload p = vote("__all_sync", line, mask, predicate != 0);
  return p.ballot == p.arrived;
}
inline void syncwarp(int line, unsigned mask = emulator::kFullWarp) {
  emulator::WarpArrival arrival{"__syncwarp", line, mask, &emulator::complete_syncwarp, nullptr};
  emulator::warp_collective(arrival);
}
inline unsigned __activemask() { return emulator::live_lanes_of_running_warp(); }

// ---- vector memory (common/vector_memory.cuh) ----------------------------------------

template <class Element>
concept GlobalStorage = requires(const Element& e) { e.unchecked_bits(); };

// Reads `bytes` of whole elements at `p` into `out` after one check of
// them all (aligned to `alignment`); false, leaving `out` alone, after a
// report.
template <GlobalStorage Element>
bool read_global_bits(const Element* p, std::size_t bytes, std::size_t alignment, std::byte* out,
                      emulator::MemoryOp op) {
  using Bits = typename Element::bits_type;
  emulator::note_global_access(p, bytes, op);
  if (!emulator::launch_context().buffers->check_vector(p, bytes, alignment,
                                                        emulator::Access::read))
    return false;
  for (std::size_t i = 0; i < bytes / sizeof(Bits); ++i) {
    const Bits bits = p[i].unchecked_bits();
    std::memcpy(out + i * sizeof(Bits), &bits, sizeof bits);
  }
  return true;
}

template <GlobalStorage Element>
void vector_load(const Element* p, std::size_t bytes, unsigned* words) {
  std::memset(words, 0xff, bytes);
  (void)read_global_bits(p, bytes, bytes, reinterpret_cast<std::byte*>(words),
                         emulator::MemoryOp::load);
}

template <GlobalStorage Element>
void vector_store(Element* p, std::size_t bytes, const unsigned* words) {
  using Bits = typename Element::bits_type;
  emulator::note_global_access(p, bytes, emulator::MemoryOp::store);
  if (!emulator::launch_context().buffers->check_vector(p, bytes, bytes, emulator::Access::write))
    return;
  for (std::size_t i = 0; i < bytes / sizeof(Bits); ++i) {
    Bits bits;
    std::memcpy(&bits, reinterpret_cast<const std::byte*>(words) + i * sizeof(Bits), sizeof bits);
    p[i].unchecked_set(bits);
  }
}

// A shared access of `bytes` at `p`: true when its elements tile it and it
// is aligned (shared arrays start 16-byte aligned, CONVJIT_SHARED_ARRAY).
template <class T>
bool shared_vector_fits(const char* what, SharedAddress<T> p, std::size_t bytes) {
  if (bytes % sizeof(T) == 0 && (p.index() * static_cast<long long>(sizeof(T))) %
                                        static_cast<long long>(bytes) == 0)
    return true;
  emulator::report_violation(fmt::format(
      "{} {} bytes at shared {}[{}] ({}-byte elements): not {}-byte aligned, or not whole "
      "elements; it faults on the GPU",
      what, bytes, p.region().name(), p.index(), sizeof(T), bytes));
  return false;
}

template <class T>
void vector_load(SharedAddress<T> p, std::size_t bytes, unsigned* words) {
  std::memset(words, 0xff, bytes);
  emulator::note_shared_access(p.region(), p.index(), bytes, emulator::MemoryOp::load);
  if (!shared_vector_fits("reads", p, bytes)) return;
  for (std::size_t i = 0; i < bytes / sizeof(T); ++i)
    if (const void* at = p.region().element(p.index() + static_cast<long long>(i),
                                            emulator::Access::read))
      std::memcpy(reinterpret_cast<std::byte*>(words) + i * sizeof(T), at, sizeof(T));
}

template <class T>
void vector_store(SharedAddress<T> p, std::size_t bytes, const unsigned* words) {
  emulator::note_shared_access(p.region(), p.index(), bytes, emulator::MemoryOp::store);
  if (!shared_vector_fits("writes", p, bytes)) return;
  for (std::size_t i = 0; i < bytes / sizeof(T); ++i)
    if (void* at = p.region().element(p.index() + static_cast<long long>(i),
                                      emulator::Access::write))
      std::memcpy(at, reinterpret_cast<const std::byte*>(words) + i * sizeof(T), sizeof(T));
}

// ---- cp.async (common/cp_async.cuh) ----------------------------------------------------

template <std::size_t Bytes, class T, GlobalStorage Element>
void cp_async(const char* kind, SharedAddress<T> dst, const Element* src, int src_bytes) {
  static_assert(Bytes == 4 || Bytes == 8 || Bytes == 16, "cp.async copies 4, 8 or 16 bytes");
  if (src_bytes < 0 || src_bytes > static_cast<int>(Bytes)) {
    emulator::report_violation(fmt::format("{} of {} bytes with source size {}: it must be 0 to {}",
                                           kind, Bytes, src_bytes, Bytes));
    return;
  }
  emulator::note_shared_access(dst.region(), dst.index(), Bytes, emulator::MemoryOp::async_copy);
  if (!shared_vector_fits(kind, dst, Bytes)) return;
  emulator::PendingCopy copy{&dst.region(), dst.index(),
                             static_cast<long long>(Bytes / sizeof(T))};
  const auto from = static_cast<std::size_t>(src_bytes);
  if (from > 0 &&
      !read_global_bits(src, from, Bytes, copy.data.data(), emulator::MemoryOp::async_copy))
    return;
  if (!dst.region().begin_async_write(copy.first, copy.count)) return;
  emulator::BlockScheduler::current().async_copies().issue(copy);
}

inline void cp_async_commit_group() { emulator::BlockScheduler::current().async_copies().commit(); }

inline void cp_async_wait_group(unsigned newest) {
  for (const emulator::PendingCopy& c :
       emulator::BlockScheduler::current().async_copies().take_landing(newest))
    c.region->land_async_write(c.first, c.count, c.data.data());
}

// ---- ldmatrix and mma (common/ldmatrix.cuh, common/mma.cuh) ---------------------------------

inline const char* ldmatrix_name(int matrices, bool trans) {
  static constexpr const char* kNames[2][3] = {
      {"ldmatrix.sync.aligned.m8n8.x1.shared.b16", "ldmatrix.sync.aligned.m8n8.x2.shared.b16",
       "ldmatrix.sync.aligned.m8n8.x4.shared.b16"},
      {"ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16",
       "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
       "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"}};
  return kNames[trans ? 1 : 0][matrices == 4 ? 2 : matrices - 1];
}

template <class T>
void ldmatrix(unsigned* out, int matrices, bool trans, SharedAddress<T> row) {
  emulator::LdmatrixPayload p{&row.region(), row.index(), matrices, trans, out};
  // Lanes past the matrices' rows give addresses that ldmatrix ignores.
  if (emulator::running_lane() >= 8u * static_cast<unsigned>(matrices))
    p.region = nullptr;
  else
    emulator::note_shared_access(row.region(), row.index(), 16, emulator::MemoryOp::ldmatrix,
                                 static_cast<unsigned>(matrices));
  emulator::WarpArrival arrival{ldmatrix_name(matrices, trans), 0, emulator::kFullWarp,
                                &emulator::complete_ldmatrix, &p};
  emulator::warp_collective(arrival);
}

inline void mma(const char* name, emulator::CompleteCollective complete, float* d,
                const unsigned* a, const unsigned* b, const float* c) {
  emulator::note_mma();
  emulator::MmaPayload p{a, b, c, d};
  emulator::WarpArrival arrival{name, 0, emulator::kFullWarp, complete, &p};
  emulator::warp_collective(arrival);
}

inline unsigned to_tf32_bits(float value) { return emulator::round_to_tf32(value); }

// ---- setmaxnreg (common/warpgroup.cuh) ----------------------------------------------------

inline void setmaxnreg(bool increase, unsigned registers) {
  emulator::SetmaxnregPayload p{increase, registers};
  emulator::WarpArrival arrival{
      increase ? "setmaxnreg.inc.sync.aligned.u32" : "setmaxnreg.dec.sync.aligned.u32", 0,
      emulator::kFullWarp, &emulator::complete_setmaxnreg, &p};
  emulator::warp_collective(arrival);
}

// A template without a second pass leaves convjit_kernel_finish to this,
// a GEMM template convjit_gemm_finish<Math>; one without a first pass
// convjit_gemm_prepare<Math>, else convjit_kernel_prepare.
inline constexpr std::nullptr_t convjit_kernel_finish = nullptr;
inline constexpr std::nullptr_t convjit_kernel_prepare = nullptr;
template <class Math>
inline constexpr std::nullptr_t convjit_gemm_finish = nullptr;
template <class Math>
inline constexpr std::nullptr_t convjit_gemm_prepare = nullptr;

}  // namespace convjit::emulated

#include "dispatcher/backends/emulator/device_bulk_copy.hpp"
#include "dispatcher/backends/emulator/device_cluster.hpp"
#include "dispatcher/backends/emulator/device_mbarrier.hpp"
#include "dispatcher/backends/emulator/device_wgmma.hpp"
