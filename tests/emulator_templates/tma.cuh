// Test-only template (f32): the TMA wrappers (common/tma.cuh).  Thread 0
// of each block loads one box with maps.map[0] into shared memory,
// completing on an mbarrier that every thread waits for; then threads
// t < E (the box's elements) write out[E b + t] = box[t], the raw shared
// contents, swizzle and all.  support/tma_cases.hpp has each mode's maps
// and coordinates (the same as below), and the expected results:
//   0-3  a 2D tile (40 x 20 tensor) at three corners, partly outside it,
//        with no swizzle and the 32, 64 and 128-byte swizzles;
//   4    a 3D tile with traversal strides 2 and 3;
//   5, 6 4D im2col (NHWC 2 x 4 x 5 x 8): corners that differ by dimension,
//        and a 3x3 filter's with stride 2 (swizzled), wrapping into the next
//        image and past the last;
//   16, 17  1D and 5D tiles; 18, 19  5D and 3D im2col;
//   7    a load, doubled by the threads, then stored with maps.map[1] to
//        its place in the 40 x 20 output (tile edges cut off).
// Planted bugs: 8 an unaligned destination; 9 reads before the wait;
// 10 a map larger than its tensor; 11 a store without fence.proxy.async;
// 12 an expect_tx 16 bytes short; 13 a swizzle into a 16-byte aligned
// array; 14 the store's source rewritten before wait_group.read; 15 an
// im2col base outside the bounding box; 20 a 2D tile's innermost coordinate
// 12 bytes before the tensor (-3 floats), not a multiple of 16 bytes, which
// an H200 stopped on with an illegal instruction.
#include "common/grid.cuh"
#include "common/tma.cuh"

namespace convjit_device {

// The box's elements in each mode.
__device__ __forceinline__ int tma_test_elements(int mode) {
  return mode == 4 ? 72 : mode == 17 ? 64 : 128;
}

// The box's coordinates for block b (at most 3 blocks, or 10 in the store modes).
__device__ __forceinline__ void tma_test_coords(int mode, int b, int (&c)[5], int (&o)[3]) {
  const int tile2d[3][2] = {{0, 0}, {-4, -5}, {36, 10}};
  const int tile3d[3][3] = {{0, 0, 0}, {0, 1, 1}, {0, -1, 7}};
  const int tile5d[3][5] = {{0, 0, 1, 0, 0}, {0, 1, 2, 1, 1}, {0, -1, 0, 0, 1}};
  const int im2col_s1[3][6] = {{0, -1, 0, 0, 0, 0}, {0, 2, 1, 0, 2, 1}, {0, 3, 1, 0, 1, 2}};
  const int im2col_s2[3][6] = {{0, -1, -1, 0, 1, 1}, {0, 1, 1, 1, 0, 2}, {0, 3, 1, 0, 2, 0}};
  for (int i = 0; i < 5; ++i) c[i] = 0;
  for (int i = 0; i < 3; ++i) o[i] = 0;
  if (mode <= 3 || (mode >= 8 && mode <= 13 && mode != 11) || mode == 20) {
    c[0] = mode == 20 && b == 1 ? -3 : tile2d[b][0], c[1] = tile2d[b][1];
  } else if (mode == 7 || mode == 11 || mode == 14) {
    c[0] = 8 * (b % 5), c[1] = 16 * (b / 5);
  } else if (mode == 4) {
    for (int i = 0; i < 3; ++i) c[i] = tile3d[b][i];
  } else if (mode == 17) {
    for (int i = 0; i < 5; ++i) c[i] = tile5d[b][i];
  } else if (mode == 16) {
    c[0] = b == 0 ? 0 : b == 1 ? -64 : 736;
  } else if (mode == 5 || mode == 6 || mode == 15) {
    const int(&t)[6] = mode == 6 ? im2col_s2[b] : im2col_s1[b];
    for (int i = 0; i < 4; ++i) c[i] = t[i];
    o[0] = t[4], o[1] = t[5];
    if (mode == 15 && b == 1) c[1] = 4;  // the box's W range is [-1, 3]
  } else if (mode == 18) {
    c[1] = c[2] = c[3] = -1, o[0] = 1, o[2] = 2;
  } else {  // 19
    c[1] = 10, c[2] = b % 2, o[0] = 3;
  }
}

template <class Dst, class Barrier>
__device__ __forceinline__ void tma_test_load(int mode, Dst dst, const tensor_map_t& map,
                                              Barrier bar, const int (&c)[5], const int (&o)[3]) {
  if (mode == 16)
    tma_load_tile(dst, map, bar, {c[0]});
  else if (mode == 4)
    tma_load_tile(dst, map, bar, {c[0], c[1], c[2]});
  else if (mode == 17)
    tma_load_tile(dst, map, bar, {c[0], c[1], c[2], c[3], c[4]});
  else if (mode == 5 || mode == 6 || mode == 15)
    tma_load_im2col(dst, map, bar, {c[0], c[1], c[2], c[3]}, {o[0], o[1]});
  else if (mode == 18)
    tma_load_im2col(dst, map, bar, {c[0], c[1], c[2], c[3], c[4]}, {o[0], o[1], o[2]});
  else if (mode == 19)
    tma_load_im2col(dst, map, bar, {c[0], c[1], c[2]}, {o[0]});
  else
    tma_load_tile(dst, map, bar, {c[0], c[1]});
}

}  // namespace convjit_device

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* /*in0*/,
                              const convjit_device::storage_t* /*in1*/,
                              convjit_device::storage_t* out, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* /*workspace*/,
                              const convjit_device::storage_t* /*bias*/,
                              const convjit_device::storage_t* /*residual*/,
                              const CONVJIT_GRID_CONSTANT convjit_device::tensor_maps_t maps) {
  using namespace convjit_device;
  typedef Problem P;
  CONVJIT_SHARED_ARRAY(mbarrier_t, bar, 1);
  CONVJIT_SHARED_ARRAY_ALIGNED(float, box, 256, 1024);
  CONVJIT_SHARED_ARRAY(float, loose, 256);
  const int mode = static_cast<int>(P::MODE), elements = tma_test_elements(mode);
  const int t = static_cast<int>(threadIdx.x), b = static_cast<int>(blockIdx.x);
  const bool storing = mode == 7 || mode == 11 || mode == 14;
  int c[5], o[3];
  tma_test_coords(mode, b, c, o);
  if (t == 0) {
    mbarrier_init(&bar[0], 1);
    fence_mbarrier_init();
  }
  __syncthreads();
  if (t == 0) {
    const unsigned bytes = 4u * static_cast<unsigned>(elements);
    mbarrier_arrive_expect_tx(&bar[0], mode == 12 ? bytes - 16 : bytes);
    if (mode == 8)
      tma_test_load(mode, &box[4], maps.map[0], &bar[0], c, o);
    else if (mode == 13)
      tma_test_load(mode, &loose[0], maps.map[0], &bar[0], c, o);
    else
      tma_test_load(mode, &box[0], maps.map[0], &bar[0], c, o);
  }
  if (mode == 9 && t < elements) out[elements * b + t] = store(box[t]);
  mbarrier_wait_parity(&bar[0], 0);
  if (!storing) {
    if (t < elements) out[elements * b + t] = store(2.0f * 0.5f * box[t]);
  } else {
    if (t < elements) box[t] = 2.0f * box[t];
    if (mode != 11) fence_proxy_async();
    __syncthreads();
    if (t == 0) {
      tma_store_tile(maps.map[1], &box[0], {c[0], c[1]});
      tma_store_commit();
      if (mode == 14) box[0] = 0.0f;
      tma_store_wait_read<0>();
    }
  }
  __syncthreads();
  if (t == 0) mbarrier_inval(&bar[0]);
}
