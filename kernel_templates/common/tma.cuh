// TMA: the copy engine's box copies between a tensor in global memory and
// shared memory (cp.async.bulk.tensor, sm_90; the PTX ISA's "Tensor Data
// Movement").  One thread issues a copy of a whole box, described by a
// tensor map (common/tensor_map.cuh) and the box's coordinates:
//   - tma_load_tile: the box at `coords` (dimension 0 first), packed in
//     shared memory with dimension 0 innermost; elements outside the
//     tensor read as zero.  Its bytes complete on the mbarrier `bar`
//     (common/mbarrier.cuh), whose phase then expects them: a waiter of
//     that phase sees the data.
//   - tma_load_tile_multicast: the same box into each block of a cluster
//     that `mask` names (sm_90a; common/cluster.cuh), at the same offset,
//     completing on each block's barrier at `bar`'s offset;
//   - tma_load_im2col: `pixels_per_column` pixels of `channels_per_pixel`
//     channels, from the filter base (c, w[, h[, d]], n) plus the filter
//     tap `offsets`, walking W, H, D and N through the map's bounding box;
//     a convolution's implicit-GEMM operand, padding zero-filled.
//     tma_load_im2col_multicast lands it in each block of `mask`.
//   - tma_store_tile: the box from shared memory to `coords` (non-negative),
//     skipping elements outside the tensor.  Stores join a bulk group that
//     tma_store_commit() closes; tma_store_wait_read<N>() waits until at
//     most N groups still read their shared source (then it may be
//     rewritten), tma_store_wait<N>() until at most N are unfinished.
// The shared address is 128-byte aligned; with a swizzle its array is
// aligned to the swizzle's repeat (CONVJIT_SHARED_ARRAY_ALIGNED, 1024 for
// 128 bytes).  Shared memory that threads wrote with ordinary stores needs
// fence_proxy_async() in each writer, then a barrier, before a TMA store
// (or wgmma) reads it.
#pragma once
#include "common/mbarrier.cuh"
#include "common/tensor_map.cuh"

namespace convjit_device {

#if defined(CONVJIT_EMULATOR)
template <int Rank, class Dst, class Barrier>
__device__ __forceinline__ void tma_load_tile(Dst dst, const tensor_map_t& map, Barrier bar,
                                              const int (&coords)[Rank]) {
  ::convjit::emulated::tma_ops::load(::convjit::TensorMapMode::tiled, dst, map, bar, coords, {});
}
template <int Rank, class Dst, class Barrier>
__device__ __forceinline__ void tma_load_im2col(Dst dst, const tensor_map_t& map, Barrier bar,
                                                const int (&coords)[Rank],
                                                const int (&offsets)[Rank - 2]) {
  ::convjit::emulated::tma_ops::load(::convjit::TensorMapMode::im2col, dst, map, bar, coords,
                                     offsets);
}
template <int Rank, class Dst, class Barrier>
__device__ __forceinline__ void tma_load_tile_multicast(Dst dst, const tensor_map_t& map,
                                                        Barrier bar, const int (&coords)[Rank],
                                                        unsigned short mask) {
  ::convjit::emulated::tma_ops::load(::convjit::TensorMapMode::tiled, dst, map, bar, coords, {},
                                     mask);
}
template <int Rank, class Dst, class Barrier>
__device__ __forceinline__ void tma_load_im2col_multicast(Dst dst, const tensor_map_t& map,
                                                          Barrier bar, const int (&coords)[Rank],
                                                          const int (&offsets)[Rank - 2],
                                                          unsigned short mask) {
  ::convjit::emulated::tma_ops::load(::convjit::TensorMapMode::im2col, dst, map, bar, coords,
                                     offsets, mask);
}
template <int Rank, class Src>
__device__ __forceinline__ void tma_store_tile(const tensor_map_t& map, Src src,
                                               const int (&coords)[Rank]) {
  ::convjit::emulated::tma_ops::store(map, src, coords);
}
__device__ __forceinline__ void tma_store_commit() { ::convjit::emulated::tma_ops::commit(); }
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
  ::convjit::emulated::tma_ops::wait(N);
}
template <int N>
__device__ __forceinline__ void tma_store_wait() {
  ::convjit::emulated::tma_ops::wait(N);
}
__device__ __forceinline__ void fence_proxy_async() {
  ::convjit::emulated::tma_ops::fence_proxy_async();
}
#else
__device__ __forceinline__ unsigned long long tensor_map_address(const tensor_map_t& map) {
  return reinterpret_cast<unsigned long long>(&map);
}

template <int Rank, class Dst>
__device__ __forceinline__ void tma_load_tile(Dst* dst, const tensor_map_t& map, mbarrier_t* bar,
                                              const int (&c)[Rank]) {
  static_assert(Rank >= 1 && Rank <= 5, "a tensor map has 1 to 5 dimensions");
  const unsigned d = shared_address(dst), b = shared_address(bar);
  const unsigned long long m = tensor_map_address(map);
  if constexpr (Rank == 1)
    asm volatile(
        "cp.async.bulk.tensor.1d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2}], [%3];\n" ::"r"(d),
        "l"(m), "r"(c[0]), "r"(b)
        : "memory");
  else if constexpr (Rank == 2)
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(d),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(b)
        : "memory");
  else if constexpr (Rank == 3)
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(d),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(b)
        : "memory");
  else if constexpr (Rank == 4)
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(d),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(b)
        : "memory");
  else
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4, %5, %6}], [%7];\n" ::"r"(d),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(b)
        : "memory");
}

// sm_90a: the box lands at `dst`'s offset in each block of `mask` (cluster
// ranks), completing on each one's barrier at `bar`'s offset.
template <int Rank, class Dst>
__device__ __forceinline__ void tma_load_tile_multicast(Dst* dst, const tensor_map_t& map,
                                                        mbarrier_t* bar, const int (&c)[Rank],
                                                        unsigned short mask) {
  static_assert(Rank >= 2 && Rank <= 5, "a multicast tile load has 2 to 5 dimensions");
  const unsigned d = shared_address(dst), b = shared_address(bar);
  const unsigned long long m = tensor_map_address(map);
  if constexpr (Rank == 2)
    asm volatile(
        "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(d),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(b), "h"(mask)
        : "memory");
  else if constexpr (Rank == 3)
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%2, %3, %4}], [%5], %6;\n" ::"r"(d),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(b), "h"(mask)
        : "memory");
  else if constexpr (Rank == 4)
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%2, %3, %4, %5}], [%6], %7;\n" ::"r"(d),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(b), "h"(mask)
        : "memory");
  else
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%2, %3, %4, %5, %6}], [%7], %8;\n" ::"r"(d),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(b), "h"(mask)
        : "memory");
}

// The offsets are 16-bit operands (0-65535, 0-255 and 0-31 for ranks 3, 4, 5).
template <int Rank, class Dst>
__device__ __forceinline__ void tma_load_im2col(Dst* dst, const tensor_map_t& map, mbarrier_t* bar,
                                                const int (&c)[Rank], const int (&o)[Rank - 2]) {
  static_assert(Rank >= 3 && Rank <= 5, "an im2col map has 3 to 5 dimensions");
  const unsigned d = shared_address(dst), b = shared_address(bar);
  const unsigned long long m = tensor_map_address(map);
  if constexpr (Rank == 3)
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5], {%6};\n" ::"r"(d),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(b), "h"(static_cast<unsigned short>(o[0]))
        : "memory");
  else if constexpr (Rank == 4)
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};\n" ::"r"(d),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(b),
        "h"(static_cast<unsigned short>(o[0])), "h"(static_cast<unsigned short>(o[1]))
        : "memory");
  else
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4, %5, %6}], [%7], {%8, %9, %10};\n" ::"r"(d),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(b),
        "h"(static_cast<unsigned short>(o[0])), "h"(static_cast<unsigned short>(o[1])),
        "h"(static_cast<unsigned short>(o[2]))
        : "memory");
}

// sm_90a: the im2col box into each block of `mask`, as
// tma_load_tile_multicast.
template <int Rank, class Dst>
__device__ __forceinline__ void tma_load_im2col_multicast(Dst* dst, const tensor_map_t& map,
                                                          mbarrier_t* bar, const int (&c)[Rank],
                                                          const int (&o)[Rank - 2],
                                                          unsigned short mask) {
  static_assert(Rank >= 3 && Rank <= 5, "an im2col map has 3 to 5 dimensions");
  const unsigned d = shared_address(dst), b = shared_address(bar);
  const unsigned long long m = tensor_map_address(map);
  if constexpr (Rank == 3)
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%2, %3, %4}], [%5], {%6}, %7;\n" ::"r"(d),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(b), "h"(static_cast<unsigned short>(o[0])),
        "h"(mask)
        : "memory");
  else if constexpr (Rank == 4)
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8}, %9;\n" ::"r"(d),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(b),
        "h"(static_cast<unsigned short>(o[0])), "h"(static_cast<unsigned short>(o[1])), "h"(mask)
        : "memory");
  else
    asm volatile(
        "cp.async.bulk.tensor.5d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes"
        ".multicast::cluster [%0], [%1, {%2, %3, %4, %5, %6}], [%7], {%8, %9, %10}, %11;\n" ::"r"(
            d),
        "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(b),
        "h"(static_cast<unsigned short>(o[0])), "h"(static_cast<unsigned short>(o[1])),
        "h"(static_cast<unsigned short>(o[2])), "h"(mask)
        : "memory");
}

template <int Rank, class Src>
__device__ __forceinline__ void tma_store_tile(const tensor_map_t& map, const Src* src,
                                               const int (&c)[Rank]) {
  static_assert(Rank >= 1 && Rank <= 5, "a tensor map has 1 to 5 dimensions");
  const unsigned s = shared_address(src);
  const unsigned long long m = tensor_map_address(map);
  if constexpr (Rank == 1)
    asm volatile(
        "cp.async.bulk.tensor.1d.global.shared::cta.bulk_group [%0, {%1}], [%2];\n" ::"l"(m),
        "r"(c[0]), "r"(s)
        : "memory");
  else if constexpr (Rank == 2)
    asm volatile(
        "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(m),
        "r"(c[0]), "r"(c[1]), "r"(s)
        : "memory");
  else if constexpr (Rank == 3)
    asm volatile(
        "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];\n" ::"l"(
            m),
        "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(s)
        : "memory");
  else if constexpr (Rank == 4)
    asm volatile(
        "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4}], [%5];\n" ::
            "l"(m),
        "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(s)
        : "memory");
  else
    asm volatile(
        "cp.async.bulk.tensor.5d.global.shared::cta.bulk_group [%0, {%1, %2, %3, %4, %5}], "
        "[%6];\n" ::"l"(m),
        "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(s)
        : "memory");
}

__device__ __forceinline__ void tma_store_commit() {
  asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
}
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void tma_store_wait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
#endif

}  // namespace convjit_device
