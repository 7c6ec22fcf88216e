// Convolution forward for Hopper (sm_90a): the implicit GEMM of
// conv/conv_fwd_gemm.cuh, y[m, n] = sum_k A[m, k] B[n, k] over
// m = output pixels, n = filters, k = taps x channels, with the operands
// brought in by TMA and multiplied by wgmma.  A block computes a
// BM x BN = 128 x 128 tile of y in two warpgroups:
//   - the producer (warpgroup 0; one thread issues, the rest give their
//     registers to the consumer): per K step of 64 channels of one tap,
//     an im2col load of A (128 pixels x 64 channels, x's padding
//     zero-filled by TMA, tensor map 0) and a tile load of B (128 filters
//     x 64 channels of that tap, tensor map 1), both 128-byte swizzled,
//     into a ring of STAGES stages in dynamic shared memory, each
//     completing on its stage's `full` mbarrier;
//   - the consumer (warpgroup 1): per stage, four k16 steps of two
//     m64n128 wgmmas (rows 0-63 and 64-127 of the tile) reading both
//     operands through their descriptors, then it releases the stage
//     (its `empty` mbarrier) once the wgmmas that read it are done;
//   - the epilogue (stage_accumulators, store_tile): the accumulators
//     through shared memory to y, alpha/beta-blended, in 16-byte chunks
//     of 8 filters where y's filters are contiguous.
// A stride-1 bwddata runs as the forward conv it equals: dx from dy and
// the filters transposed, their taps flipped (the Problem is that conv's;
// wgmma_forward_equivalent).
// Where it applies (dispatcher/backends/jit/wgmma_conv.hpp): f16 and
// bf16, one group, channels-last x with 16-byte aligned strides (TMA's
// rule), conv strides up to 8 (TMA's traversal stride), no fused epilogue
// (the tensor maps take its operands' place in the kernel ABI).  Filters
// TMA cannot read in place (K C R S) are first copied, K R S C, into the
// workspace (convjit_kernel_prepare).
#include "common/epilogue.cuh"
#include "common/grid.cuh"
#include "common/tma.cuh"
#include "common/vector_memory.cuh"
#include "common/wgmma.cuh"
#include "conv/im2col_loads.cuh"
#include "conv/packed_filters.cuh"
#include "conv/wgmma_conv_shape.cuh"
#include "conv/wgmma_pipeline.cuh"

namespace convjit_device {
namespace conv_fwd_wgmma {

typedef Problem P;
using namespace wgmma_pipeline;

constexpr int kBlockM = CONVJIT_WGMMA_PIXELS, kBlockN = CONVJIT_WGMMA_FILTERS,
              kBlockK = CONVJIT_WGMMA_CHANNELS;
static_assert(kBlockM == kBlockN, "A's and B's tiles take the same bytes of a stage");
constexpr unsigned kOperandBytes = kBlockM * kBlockK * 2;  // A's and B's tiles per stage
constexpr unsigned kStageBytes = 2 * kOperandBytes;

// The K steps: every tap's channels in blocks of kBlockK.
__device__ __forceinline__ int channel_blocks() {
  return static_cast<int>((P::CG + kBlockK - 1) / kBlockK);
}
__device__ __forceinline__ int k_steps() {
  return static_cast<int>(P::T * P::R * P::S) * channel_blocks();
}

// One K step's loads: A's pixels from the tile's first anchor at one
// tap, B's filters at that tap.
template <class Shared, class Barrier>
__device__ __forceinline__ void load_stage(const tensor_maps_t& maps, Shared a, Shared b,
                                           Barrier full, const Anchor& first, int step,
                                           int filter0) {
  const FilterTap tap = filter_tap(step / channel_blocks());
  const int c0 = step % channel_blocks() * kBlockK;
  load_pixels(a, maps.map[0], full, c0, first, tap);
  tma_load_tile<5>(b, maps.map[1], full, {c0, tap.s, tap.r, tap.t, filter0});
}

// The producer's loop: each step's loads into its stage of the ring.
template <class Tiles, class Ring>
__device__ __forceinline__ void produce(const tensor_maps_t& maps, Tiles tiles, const Ring& ring,
                                        const Anchor& first, int filter0) {
  for (int step = 0; step < k_steps(); ++step) {
    ring.acquire(step, kStageBytes);
    const unsigned at = static_cast<unsigned>(ring.stage(step)) * kStageBytes / 4;  // in floats
    load_stage(maps, &tiles[at], &tiles[at + kOperandBytes / 4], &ring.full[ring.stage(step)],
               first, step, filter0);
  }
}

// The consumer's loop: per stage, 4 k16 slices of the two m64n128 wgmmas;
// a slice is 32 bytes further along the swizzled rows.  A stage is
// released once the wgmmas reading it are done, a step later.
template <class Tiles, class Ring>
__device__ __forceinline__ void consume(Tiles tiles, const Ring& ring,
                                        wgmma_accumulators<kBlockN>& top,
                                        wgmma_accumulators<kBlockN>& bottom) {
  for (int step = 0; step < k_steps(); ++step) {
    ring.wait_loaded(step);
    const unsigned at = static_cast<unsigned>(ring.stage(step)) * kStageBytes / 4;
    const unsigned long long a =
        wgmma_descriptor(&tiles[at], 16, kSwizzleRowGroup, wgmma_swizzle_128);
    const unsigned long long b =
        wgmma_descriptor(&tiles[at + kOperandBytes / 4], 16, kSwizzleRowGroup, wgmma_swizzle_128);
    // A's rows 64-127, in the descriptor's 16-byte units.
    constexpr unsigned long long kHalfA = kOperandBytes / 2 >> 4;
    wgmma_fence();
    for (int slice = 0; slice < kBlockK / 16; ++slice) {
      const unsigned long long offset = static_cast<unsigned long long>(slice) * 32 >> 4;
      const bool accumulate = step > 0 || slice > 0;
      wgmma_ss<kBlockN, Operand>(top, a + offset, b + offset, accumulate);
      wgmma_ss<kBlockN, Operand>(bottom, a + kHalfA + offset, b + offset, accumulate);
    }
    wgmma_commit_group();
    // One step's wgmmas stay in flight while the next stage is awaited:
    // the previous step's are done, and their stage goes back.
    wgmma_wait_group<1>(top);
    wgmma_wait_group<1>(bottom);
    if (step > 0) ring.release(step - 1);
  }
  wgmma_wait_group<0>(top);
  wgmma_wait_group<0>(bottom);
}

// The epilogue, in two halves around a block barrier.  First each
// consumer thread puts its accumulators, in f32, into the tile `staged`
// (row-major, a pixel's 128 filters a 512-byte row) in shared memory that
// the main loop no longer needs; 16-byte chunks are XOR-swizzled by the
// row so that both halves' accesses are conflict-free.  Then the consumer
// writes y a chunk of 8 filters at a time (16 bytes of y where its filters
// are contiguous and aligned), alpha/beta-blended and rounded once.
constexpr int kStagedRowFloats = kBlockN;

__device__ __forceinline__ int staged_index(int row, int col) {
  const int chunk = (col / 4) ^ (row % 8);
  return row * kStagedRowFloats + chunk * 4 + col % 4;
}

template <class Staged>
__device__ __forceinline__ void stage_accumulators(Staged staged, wgmma_accumulators<kBlockN>& acc,
                                                   int row0) {
  const int warp = static_cast<int>(threadIdx.x / 32 % 4);
  const int lane = static_cast<int>(threadIdx.x % 32);
#pragma unroll
  for (int i = 0; i < kBlockN / 2; ++i) {
    const int row = row0 + 16 * warp + lane / 4 + 8 * (i / 2 % 2);
    staged[staged_index(row, 8 * (i / 4) + 2 * (lane % 4) + i % 2)] = acc[i];
  }
}

// y's element offset of output pixel m.
__device__ __forceinline__ index_t pixel_offset(index_t m) {
  const index_t ow = m % P::OW, oh = m / P::OW % P::OH, od = m / (P::OW * P::OH) % P::OD;
  return m / (P::OW * P::OH * P::OD) * P::YS0 + od * P::YS2 + oh * P::YS3 + ow * P::YS4;
}

template <class Staged>
__device__ __forceinline__ void store_tile(Staged staged, storage_t* y, index_t pixel0,
                                          int filter0, float alpha, float beta) {
  constexpr int kChunks = kBlockN / kChunkElements;  // per row
  const index_t pixels = P::N * P::OD * P::OH * P::OW;
  const bool vectors =
      chunked(P::K, P::YS1, P::YS0, P::YS2, P::YS3, P::YS4) && chunk_aligned(y);
  const int t = static_cast<int>(threadIdx.x % kWarpgroupSize);
  for (int item = t; item < kBlockM * kChunks; item += static_cast<int>(kWarpgroupSize)) {
    const int row = item / kChunks, col = item % kChunks * kChunkElements;
    const index_t m = pixel0 + row, filter = filter0 + col;
    if (m >= pixels || filter >= P::K) continue;
    float v[kChunkElements];
#pragma unroll
    for (int j = 0; j < kChunkElements; ++j) v[j] = staged[staged_index(row, col + j)];
    storage_t* out = y + pixel_offset(m) + filter * P::YS1;
    if (!vectors) {
      for (int j = 0; j < kChunkElements && filter + j < P::K; ++j)
        scale_store(&out[j * P::YS1], v[j], alpha, beta);
      continue;
    }
    float old[kChunkElements];
    if (beta != 0.0f) unpack_chunk(load_128(out), old);
#pragma unroll
    for (int j = 0; j < kChunkElements; ++j)
      v[j] = alpha * v[j] + (beta != 0.0f ? beta * old[j] : 0.0f);
    store_128(out, pack_chunk(v));
  }
}

}  // namespace conv_fwd_wgmma
}  // namespace convjit_device

// The register cap at entry (BLOCKS_PER_SM blocks of 256 threads an SM:
// 255 or 128 registers) is what lets setmaxnreg move registers between
// the warpgroups.
CONVJIT_KERNEL_BOUNDED(256, Problem::BLOCKS_PER_SM)
convjit_kernel(const convjit_device::storage_t* /*x*/, const convjit_device::storage_t* /*w*/,
               convjit_device::storage_t* y, float alpha, float beta,
               convjit_device::scratch_t* /*workspace*/,
               const CONVJIT_GRID_CONSTANT convjit_device::tensor_maps_t maps) {
  using namespace convjit_device;
  using namespace convjit_device::conv_fwd_wgmma;
  CONVJIT_DYNAMIC_SHARED_ARRAY(float, smem);
  CONVJIT_SHARED_ARRAY(mbarrier_t, full, kMaxStages);
  CONVJIT_SHARED_ARRAY(mbarrier_t, empty, kMaxStages);
  CONVJIT_SHARED_ARRAY(mbarrier_t, consumers, 1);
  const index_t filter_tiles = (P::K + kBlockN - 1) / kBlockN;
  const index_t pixel0 = static_cast<index_t>(blockIdx.x) / filter_tiles * kBlockM;
  const int filter0 = static_cast<int>(static_cast<index_t>(blockIdx.x) % filter_tiles * kBlockN);
  const auto stages = ring(full, empty);
  if (threadIdx.x == 0) {
    stages.init();
    mbarrier_init(&consumers[0], kWarpgroupSize);
    fence_mbarrier_init();
  }
  __syncthreads();
  // The warpgroups part here for good: code they shared after setmaxnreg
  // would have to fit the producer's 40 registers.
  if (warpgroup_id() == 0) {
    setmaxnreg_dec<40>();
    if (threadIdx.x == 0) produce(maps, smem, stages, window_anchor(pixel0), filter0);
    return;
  }
  consumer_registers();
  wgmma_accumulators<kBlockN> top, bottom;
  consume(smem, stages, top, bottom);
  // Every stage has landed and been read: the ring holds the staged tile
  // once the whole warpgroup is past its last wgmma (the consumers'
  // barrier, phase 0), and y's chunks once it is all staged (phase 1).
  mbarrier_arrive(&consumers[0]);
  mbarrier_wait_parity(&consumers[0], 0);
  stage_accumulators(smem, top, 0);
  stage_accumulators(smem, bottom, 64);
  mbarrier_arrive(&consumers[0]);
  mbarrier_wait_parity(&consumers[0], 1);
  store_tile(smem, y, pixel0, filter0, alpha, beta);
}

// The first pass where the host asks for it (wgmma_conv.hpp): w copied in
// K T R S CG order, which map 1 then reads; for a bwddata (FLIP), the
// transposed filters' taps flipped.
CONVJIT_KERNEL convjit_kernel_prepare(const convjit_device::storage_t* /*x*/,
                                      const convjit_device::storage_t* __restrict__ w,
                                      convjit_device::storage_t* /*y*/, float /*alpha*/,
                                      float /*beta*/, convjit_device::scratch_t* workspace) {
  using namespace convjit_device;
  if (Problem::FLIP)
    pack_filters<FlippedTaps<ForwardFilterOrder>>(w, workspace_storage(workspace));
  else
    pack_filters<ForwardFilterOrder>(w, workspace_storage(workspace));
}
