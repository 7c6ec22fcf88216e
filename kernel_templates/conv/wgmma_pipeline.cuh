// The warp-specialised pipeline of the Hopper convs (conv_fwd_wgmma.cuh,
// conv_bwdfilt_wgmma.cuh): a ring of P::STAGES stages in dynamic shared
// memory between
//   - the producer (warpgroup 0; one thread issues, the rest give their
//     registers to the consumer), which loads each K step's operands into
//     a stage with TMA, the loads completing on the stage's `full`
//     mbarrier;
//   - the consumers (warpgroups 1 to Problem::CONSUMERS, one or two),
//     which multiply each stage with wgmma and release it (its `empty`
//     mbarrier, one arrival per consumer warp) once the wgmmas that read
//     it are done.  Two consumers share the stage's B and take half of its
//     rows of A each: a tile twice as tall for the same B, so more FLOP per
//     byte the stage brings through the L2.
// Or, ping-pong (Problem::PINGPONG), a persistent block of two consumers
// that take its tiles in turn, each a whole tile of its own: the ring
// runs the block's tiles one after another, so that one consumer's main
// loop runs while the other writes its tile out, and no tile waits for a
// block to start.
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

__device__ __forceinline__ bool ping_pong() { return Problem::PINGPONG != 0; }
__device__ __forceinline__ unsigned cluster_size() {
  return static_cast<unsigned>(Problem::CLUSTER);
}
__device__ __forceinline__ bool clustered() { return cluster_size() > 1; }
// What a cluster's blocks share (Problem::CLUSTER_PIXELS): one filter
// tile's B over neighbouring pixel tiles, or one pixel tile's A over
// neighbouring filter tiles.
__device__ __forceinline__ bool cluster_shares_pixels() {
  return clustered() && Problem::CLUSTER_PIXELS != 0;
}
// The block that loads the cluster's shared operand into every block,
// and the mask that names them.
__device__ __forceinline__ bool loads_shared_operand() {
  return !clustered() || cluster_rank() == 0;
}
__device__ __forceinline__ unsigned short cluster_mask() {
  return static_cast<unsigned short>((1u << cluster_size()) - 1);
}
// The consumers that share a tile, and its stages: all, or in ping-pong
// each its own.
__device__ __forceinline__ int tile_consumers() { return ping_pong() ? 1 : consumers(); }
__device__ __forceinline__ unsigned tile_threads() {
  return kWarpgroupSize * static_cast<unsigned>(tile_consumers());
}
__device__ __forceinline__ unsigned tile_warps() { return tile_threads() / kWarpSize; }
// This consumer's place among its tile's (its rows' block of 128), and
// its thread's among their threads.
__device__ __forceinline__ int tile_consumer_index() { return ping_pong() ? 0 : consumer_index(); }
__device__ __forceinline__ int tile_thread() {
  return static_cast<int>(threadIdx.x) -
         static_cast<int>(kWarpgroupSize) * (1 + consumer_index() - tile_consumer_index());
}

// The consumers' own mbarriers (a kernel's array of
// CONVJIT_WGMMA_CONSUMER_BARRIERS): the epilogue's of each tile's
// consumers (one, or in ping-pong one a consumer), then in ping-pong each
// consumer's turn at the ring.
template <class Barriers>
__device__ __forceinline__ auto epilogue_barrier(Barriers consumers) {
  return &consumers[ping_pong() ? consumer_index() : 0];
}
template <class Barriers>
__device__ __forceinline__ auto turn_barrier(Barriers consumers, int consumer) {
  return &consumers[2 + consumer];
}

// The ring's steps are counted from the block's first: a persistent
// block's tiles follow each other on it, from(first) each tile's.
template <class Barriers>
struct Ring {
  Barriers full, empty;
  int first = 0;  // the ring step of step 0

  __device__ __forceinline__ Ring from(int tile_first) const { return {full, empty, tile_first}; }
  __device__ __forceinline__ int stage(int step) const {
    return (first + step) % static_cast<int>(Problem::STAGES);
  }
  __device__ __forceinline__ unsigned parity(int step) const {
    return static_cast<unsigned>((first + step) / static_cast<int>(Problem::STAGES)) & 1u;
  }
  // Thread 0, before the block's (the cluster's) barrier.  The loading
  // block's stages are free once every block's consumers release them.
  __device__ __forceinline__ void init() const {
    const unsigned releases = tile_warps() * (loads_shared_operand() ? cluster_size() : 1u);
    for (int s = 0; s < static_cast<int>(Problem::STAGES); ++s) {
      mbarrier_init(&full[s], 1);
      mbarrier_init(&empty[s], releases);
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
  // A warp's first lane, once the warp has waited for the wgmmas that
  // read the stage (wgmma.wait_group is warp-aligned): a warp's arrival,
  // not its 32 threads', and in a cluster one remote arrival a warp.  A
  // thread's each sent 128 remote arrivals a consumer and stage, a suspect
  // in the H200's timing the cluster tile 1.7x slower than the same tile
  // without clusters (bench/results/2026-12-04-h200).
  __device__ __forceinline__ void release(int step) const {
    if (lane_id() != 0) return;
    mbarrier_arrive(&empty[stage(step)]);
    if (!loads_shared_operand()) mbarrier_arrive_cluster(cluster_map(&empty[stage(step)], 0));
  }
  // The loading block's producer, after its last step (`steps` from the
  // ring's first): the other blocks' last releases, arrivals on its
  // barriers, are done before it returns; the ISA leaves undefined a
  // remote arrival on a block that has exited.
  __device__ __forceinline__ void drain(int steps) const {
    if (!clustered() || !loads_shared_operand()) return;
    for (int step = steps; step < steps + static_cast<int>(Problem::STAGES); ++step)
      mbarrier_wait_parity(&empty[stage(step)], parity(step) ^ 1u);
  }
};

template <class Barriers>
__device__ __forceinline__ Ring<Barriers> ring(Barriers full, Barriers empty) {
  return {full, empty, 0};
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
// `consumers` (the consumer warpgroups' own), then the producer gives its
// registers back and its first thread runs produce(), after which all its
// threads run leave() (the barriers of a cluster that its consumers meet
// at: every thread of the cluster's blocks takes part), and the consumers
// take the registers and run consume().  They part here for good: code
// they shared after setmaxnreg would have to fit the producer's 40
// registers.
template <class Ring, class Barriers, class Produce, class Consume, class Leave>
__device__ __forceinline__ void run_warpgroups(const Ring& ring, Barriers consumers,
                                               Produce produce, Consume consume, Leave leave) {
  if (threadIdx.x == 0) {
    ring.init();
    for (int c = 0; c < (ping_pong() ? static_cast<int>(Problem::CONSUMERS) : 1); ++c)
      mbarrier_init(&consumers[c], tile_threads());
    if (ping_pong())
      for (int c = 0; c < 2; ++c) mbarrier_init(turn_barrier(consumers, c), kWarpgroupSize);
    fence_mbarrier_init();
  }
  // The cluster's barrier publishes the inits to the other blocks, whose
  // consumers arrive on the loading block's.
  if (clustered())
    cluster_sync();
  else
    __syncthreads();
  if (warpgroup_id() == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) produce();
    leave();
    return;
  }
  consumer_registers();
  consume();
}
template <class Ring, class Barriers, class Produce, class Consume>
__device__ __forceinline__ void run_warpgroups(const Ring& ring, Barriers consumers,
                                               Produce produce, Consume consume) {
  run_warpgroups(ring, consumers, produce, consume, [] {});
}

// The producer's loop over `steps` K steps: each waits for its stage and
// arms it with the bytes its loads bring, `loaded_bytes` of its
// `stage_bytes`, then load(step, at) issues those loads (`at`: the
// stage's offset in the ring, in floats), completing on
// ring.full_barrier(step).
template <class Ring, class Load>
__device__ __forceinline__ void produce_steps(const Ring& ring, int steps, unsigned stage_bytes,
                                              unsigned loaded_bytes, Load load) {
#pragma unroll 1
  for (int step = 0; step < steps; ++step) {
    ring.acquire(step, loaded_bytes);
    load(step, static_cast<unsigned>(ring.stage(step)) * stage_bytes / 4);
  }
}
template <class Ring, class Load>
__device__ __forceinline__ void produce_steps(const Ring& ring, int steps, unsigned stage_bytes,
                                              Load load) {
  produce_steps(ring, steps, stage_bytes, stage_bytes, load);
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
  // A persistent block's producer goes on to its next tiles.
  if (ping_pong() && steps > 0) ring.release(steps - 1);
}

// Ping-pong's order of the consumers' main loops: each waits for its turn
// at the ring (the other's main loop over the block's previous tile done)
// before it waits on its own tile's stages, and then gives the turn back.
// So it never waits on a stage more than one phase ahead, where the
// parity would alias (step s + 2 STAGES looks like step s).  The block's
// j-th tile waits for phase (j - 1) / 2 of its consumer's turn barrier.
template <class Barriers>
__device__ __forceinline__ void wait_turn(Barriers consumers, int block_tile) {
  if (ping_pong() && block_tile > 0)
    mbarrier_wait_parity(turn_barrier(consumers, consumer_index()),
                         static_cast<unsigned>((block_tile - 1) / 2) & 1u);
}
template <class Barriers>
__device__ __forceinline__ void pass_turn(Barriers consumers) {
  if (ping_pong()) mbarrier_arrive(turn_barrier(consumers, 1 - consumer_index()));
}

// A block's work: indices from `first` below `end`, each after the one
// before, next(i) the one after i.  A block a tile: its own, blockIdx.x;
// in ping-pong (a persistent grid) blockIdx.x + j gridDim.x below the
// tiles; with Stream-K the starts of the block's parts of tiles
// (conv_fwd_wgmma.cuh).
template <class Next>
struct BlockWork {
  index_t first, end;
  Next next;
};
template <class Next>
__device__ __forceinline__ BlockWork<Next> block_work(index_t first, index_t end, Next next) {
  return {first, end, next};
}
__device__ __forceinline__ auto block_tiles(index_t tiles) {
  const index_t stride = ping_pong() ? static_cast<index_t>(gridDim.x) : tiles;
  return block_work(static_cast<index_t>(blockIdx.x), ping_pong() ? tiles : blockIdx.x + 1ll,
                    [stride](index_t tile) { return tile + stride; });
}

// Runs the block's work, each after the one before on the ring:
// each(i, j, first) runs the j-th, index i (from ring step `first`),
// where j % every == offset (the producer: every one; a ping-pong
// consumer: every other; the consumers of a block a tile: its one);
// steps(i) is its K steps.  Returns the ring's steps over all the
// block's work.
template <class Next, class Steps, class Each>
__device__ __forceinline__ int for_block_tiles(const BlockWork<Next>& work, int every, int offset,
                                               Steps steps, Each each) {
  int first = 0, j = 0;
#pragma unroll 1
  for (index_t i = work.first; i < work.end; i = work.next(i), ++j) {
    if (!ping_pong() || j % every == offset) each(i, j, first);
    first += steps(i);
  }
  return first;
}

}  // namespace wgmma_pipeline
}  // namespace convjit_device
