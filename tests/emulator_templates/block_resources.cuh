// Test-only template (f32): the block's resources on sm_90: dynamic shared
// memory beyond 48 KiB (CONVJIT_DYNAMIC_SHARED_ARRAY) and register
// reallocation between warpgroups (common/warpgroup.cuh).  The launch
// gives 200 KiB of dynamic shared memory (kStageFloats floats).  Warpgroup
// 0 gives registers back (setmaxnreg.dec 40), the others take them
// (setmaxnreg.inc 232); then thread t of a block writes
// stage[t + 256 k] = in0[i] + k for k < 200, and after a barrier
// out[i] = the sum over k of stage[(t + 1) % 256 + 256 k].
// Planted bugs (P::MODE): 1 a read past the dynamic array; 2 static
// arrays beyond 48 KiB (in the emulator only: ptxas refuses to compile
// them); 3 warp 5 asks for 240 registers, unlike its warpgroup; 4 an .inc
// to fewer registers than the warp holds; 5 the lanes of warp 4 disagree.
#include "common/grid.cuh"
#include "common/warpgroup.cuh"

namespace convjit_device {
constexpr long long kStageFloats = 200 * 1024 / 4;
constexpr int kStagePerThread = 200;
}  // namespace convjit_device

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* in0,
                              const convjit_device::storage_t* /*in1*/,
                              convjit_device::storage_t* out, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  CONVJIT_DYNAMIC_SHARED_ARRAY(float, stage);
#if defined(CONVJIT_EMULATOR)
  CONVJIT_SHARED_ARRAY(float, big, P::MODE == 2 ? 12289 : 4);
#else
  CONVJIT_SHARED_ARRAY(float, big, 4);
#endif
  const index_t i = thread_index();
  const unsigned t = threadIdx.x, n = static_cast<unsigned>(P::BLOCK);
  if (warpgroup_id() == 0) {
    setmaxnreg_dec<40>();
  } else if (P::MODE == 3 && warp_id() == 5) {
    setmaxnreg_inc<240>();
  } else if (P::MODE == 5 && warp_id() == 4 && lane_id() == 3) {
    setmaxnreg_inc<224>();
  } else {
    setmaxnreg_inc<232>();
  }
  if (P::MODE == 4 && warpgroup_id() == 1) setmaxnreg_inc<200>();
  if (t < 4) big[t] = 0.0f;
  const float x = load(in0[i]);
  for (int k = 0; k < kStagePerThread; ++k) stage[t + n * k] = x + static_cast<float>(k);
  __syncthreads();
  float sum = 0.0f;
  for (int k = 0; k < kStagePerThread; ++k) sum += stage[(t + 1) % n + n * k];
  if (P::MODE == 1 && t == 0) sum += stage[kStageFloats];
  out[i] = store(sum);
}
