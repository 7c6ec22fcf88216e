// The warp-specialised pipeline of the Hopper convs (conv_fwd_wgmma.cuh,
// conv_bwdfilt_wgmma.cuh): a ring of P::STAGES stages in dynamic shared
// memory between
//   - the producer (warpgroup 0; one thread issues, the rest give their
//     registers to the consumer), which loads each K step's operands into
//     a stage with TMA, the loads completing on the stage's `full`
//     mbarrier;
//   - the consumers (warpgroups 1 to Problem::CONSUMERS, one or two),
//     which multiply each stage with wgmma and release it (its `empty`
//     mbarrier, one arrival per consumer thread) once the wgmmas that read
//     it are done.  Two consumers share the stage's B and take half of its
//     rows of A each: a tile twice as tall for the same B, so more FLOP per
//     byte the stage brings through the L2.
// What a stage holds and how it is multiplied is the kernel's own; the
// ring's protocol, the barriers and the registers' split are here.
#pragma once
#include "common/mbarrier.cuh"
#include "common/warpgroup.cuh"
#include "common/wgmma.cuh"
#include "conv/wgmma_conv_shape.cuh"

namespace convjit_device {
namespace wgmma_pipeline {

#if CONVJIT_DTYPE == 1
typedef wgmma_f16 Operand;
#else
typedef wgmma_bf16 Operand;
#endif

constexpr int kMaxStages = CONVJIT_WGMMA_MAX_STAGES;
// The canonical layouts TMA's 128-byte swizzle writes: a row of 128 bytes
// per box row, 8-row groups 1024 bytes apart (the swizzle's repeat).
constexpr unsigned kSwizzleRowGroup = 1024;

// The consumer warpgroups (Problem::CONSUMERS), and this one's index
// among them.  Functions, not constants: the emulator binds Problem at
// run time.
__device__ __forceinline__ int consumers() { return static_cast<int>(Problem::CONSUMERS); }
__device__ __forceinline__ int consumer_index() { return static_cast<int>(warpgroup_id()) - 1; }
__device__ __forceinline__ unsigned consumer_threads() {
  return kWarpgroupSize * static_cast<unsigned>(consumers());
}

template <class Barriers>
struct Ring {
  Barriers full, empty;

  __device__ __forceinline__ static int stage(int step) {
    return step % static_cast<int>(Problem::STAGES);
  }
  __device__ __forceinline__ static unsigned parity(int step) {
    return static_cast<unsigned>(step / static_cast<int>(Problem::STAGES)) & 1u;
  }
  // Thread 0, before the block's barrier.
  __device__ __forceinline__ void init() const {
    for (int s = 0; s < static_cast<int>(Problem::STAGES); ++s) {
      mbarrier_init(&full[s], 1);
      mbarrier_init(&empty[s], consumer_threads());
    }
  }
  // The producer, before step's loads: waits for the stage to be free (a
  // fresh barrier's "previous phase", parity 1, counts as complete) and
  // arms its full barrier with the bytes the loads bring.
  __device__ __forceinline__ void acquire(int step, unsigned bytes) const {
    mbarrier_wait_parity(&empty[stage(step)], parity(step) ^ 1u);
    mbarrier_arrive_expect_tx(&full[stage(step)], bytes);
  }
  // The barrier step's loads complete on.
  __device__ __forceinline__ auto full_barrier(int step) const { return &full[stage(step)]; }
  __device__ __forceinline__ void wait_loaded(int step) const {
    mbarrier_wait_parity(&full[stage(step)], parity(step));
  }
  __device__ __forceinline__ void release(int step) const {
    mbarrier_arrive(&empty[stage(step)]);
  }
};

template <class Barriers>
__device__ __forceinline__ Ring<Barriers> ring(Barriers full, Barriers empty) {
  return {full, empty};
}

// A consumer's registers once the producer has given its own back: with
// two blocks an SM, the producer's 88 (128 - 40) go to the consumer, 216;
// with one, the most setmaxnreg lets the rest have, 232 (two consumers:
// 2 x 128 x 232 + 128 x 40 = 64,512 of the SM's 65,536).
__device__ __forceinline__ void consumer_registers() {
  if (Problem::BLOCKS_PER_SM > 1)
    setmaxnreg_inc<216>();
  else
    setmaxnreg_inc<232>();
}

// The block's warpgroups: thread 0 sets up the ring's barriers and
// `consumers` (the consumer warpgroups' own, for their epilogue), then the
// producer gives its registers back and its first thread runs produce(),
// and the consumers take them and run consume().  They part here for
// good: code they shared after setmaxnreg would have to fit the
// producer's 40 registers.
template <class Ring, class Barrier, class Produce, class Consume>
__device__ __forceinline__ void run_warpgroups(const Ring& ring, Barrier consumers,
                                               Produce produce, Consume consume) {
  if (threadIdx.x == 0) {
    ring.init();
    mbarrier_init(consumers, consumer_threads());
    fence_mbarrier_init();
  }
  __syncthreads();
  if (warpgroup_id() == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) produce();
    return;
  }
  consumer_registers();
  consume();
}

// The producer's loop over `steps` K steps: each waits for its stage and
// arms it with `stage_bytes`, then load(step, at) issues its loads (`at`:
// the stage's offset in the ring, in floats), completing on
// ring.full_barrier(step).
template <class Ring, class Load>
__device__ __forceinline__ void produce_steps(const Ring& ring, int steps, unsigned stage_bytes,
                                              Load load) {
#pragma unroll 1
  for (int step = 0; step < steps; ++step) {
    ring.acquire(step, stage_bytes);
    load(step, static_cast<unsigned>(ring.stage(step)) * stage_bytes / 4);
  }
}

// The consumer's main loop over `steps` stages: multiply(at, accumulate)
// issues a stage's wgmmas (`at`: the stage's offset in the ring, in
// floats; `accumulate`: false on the first step).  One step's wgmmas
// stay in flight while the next stage is awaited; the previous step's
// are then done, and their stage goes back to the producer.
// Neither loop is unrolled: where the steps are a constant (one slice)
// NVVM unrolled a short reduction whole, 4 K steps of a 1 x 1 conv of 256
// channels into 32 wgmmas, which added a third to NVRTC's time for the
// same SASS a step.
template <class Ring, class Accumulators, class Multiply>
__device__ __forceinline__ void consume_steps(const Ring& ring, int steps, unsigned stage_floats,
                                              Accumulators& top, Accumulators& bottom,
                                              Multiply multiply) {
#pragma unroll 1
  for (int step = 0; step < steps; ++step) {
    ring.wait_loaded(step);
    wgmma_fence();
    multiply(static_cast<unsigned>(ring.stage(step)) * stage_floats, step > 0);
    wgmma_commit_group();
    wgmma_wait_group<1>(top);
    wgmma_wait_group<1>(bottom);
    if (step > 0) ring.release(step - 1);
  }
  wgmma_wait_group<0>(top);
  wgmma_wait_group<0>(bottom);
}

}  // namespace wgmma_pipeline
}  // namespace convjit_device
