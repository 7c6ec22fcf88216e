// Test-only template (f32): each thread shuffles and votes its in0 value
// with its warp and writes 8 results to out[8 * thread ...]:
//   0 __shfl_sync from lane (7 * lane + 3) % 32   1 __shfl_up_sync by 3
//   2 __shfl_down_sync by 5                       3 __shfl_xor_sync by 9
//   4 __shfl_xor_sync by 2 in segments of 8       5 __shfl_sync from lane 5
//                                                    of its segment of 16
//   6 __ballot_sync(value > 0), as bits           7 2 * __any_sync(value > 0)
//                                                    + __all_sync(value > 0)
// P::MODE plants a bug: 1 lanes 16-31 skip the first shuffle (a divergent
// mask), 2 the mask leaves out the calling lane's neighbour half-warp.
#include "common/grid.cuh"
#include "common/warp.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* in0,
                              const convjit_device::storage_t* /*in1*/,
                              convjit_device::storage_t* out, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  const index_t i = thread_index();
  const unsigned lane = lane_id();
  const float v = load(in0[i]);
  float r[8];
  if (P::MODE != 1 || lane < 16)
    r[0] = __shfl_sync(kFullMask, v, static_cast<int>((7 * lane + 3) % 32));
  else
    r[0] = v;
  r[1] = __shfl_up_sync(kFullMask, v, 3);
  r[2] = __shfl_down_sync(kFullMask, v, 5);
  const unsigned half = lane < 16 ? 0x0000ffffu : 0xffff0000u;
  r[3] = __shfl_xor_sync(P::MODE == 2 ? (~half) | 1u : kFullMask, v, 9);
  r[4] = __shfl_xor_sync(kFullMask, v, 2, 8);
  __syncwarp();
  r[5] = __shfl_sync(kFullMask, v, 5, 16);
  r[6] = __uint_as_float(__ballot_sync(kFullMask, v > 0.0f));
  r[7] = static_cast<float>(2 * (__any_sync(kFullMask, v > 0.0f) != 0) +
                            (__all_sync(kFullMask, v > 0.0f) != 0));
  for (int k = 0; k < 8; ++k) out[8 * i + k] = store(r[k]);
}
