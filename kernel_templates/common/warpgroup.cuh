// Warpgroups (sm_90): four consecutive warps from a warp index divisible
// by 4, the unit wgmma and setmaxnreg act on.
//
// setmaxnreg_inc<N>() and setmaxnreg_dec<N>() (sm_90a) move registers
// between the warpgroups of a warp-specialised kernel: the producer gives
// some back, the consumers take them.  Every thread of a warpgroup runs
// the same one (.sync.aligned); N is 24 to 256, a multiple of 8; .inc
// never lowers a warp's count and .dec never raises it.  ptxas applies it
// only to a kernel with a register cap at entry (__launch_bounds__ with
// its minimum of one block), and warns (C7508) where it cannot.
#pragma once
#include "common/warp.cuh"

namespace convjit_device {

constexpr unsigned kWarpgroupSize = 4 * kWarpSize;

__device__ __forceinline__ unsigned warpgroup_id() { return threadIdx.x / kWarpgroupSize; }

template <int Registers>
__device__ __forceinline__ void check_register_count() {
  static_assert(Registers >= 24 && Registers <= 256 && Registers % 8 == 0,
                "setmaxnreg takes 24 to 256 registers, a multiple of 8");
}

#if defined(CONVJIT_EMULATOR)
template <int Registers>
__device__ __forceinline__ void setmaxnreg_inc() {
  check_register_count<Registers>();
  ::convjit::emulated::setmaxnreg(true, Registers);
}
template <int Registers>
__device__ __forceinline__ void setmaxnreg_dec() {
  check_register_count<Registers>();
  ::convjit::emulated::setmaxnreg(false, Registers);
}
#else
template <int Registers>
__device__ __forceinline__ void setmaxnreg_inc() {
  check_register_count<Registers>();
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Registers));
}
template <int Registers>
__device__ __forceinline__ void setmaxnreg_dec() {
  check_register_count<Registers>();
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Registers));
}
#endif

}  // namespace convjit_device
