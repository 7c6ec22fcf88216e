// Microbenchmark kernels for `convjit calibrate`: each measures one figure
// that the bottleneck model (analysis/gpu_throughput.cpp) holds as a range
// until a GPU has been measured.  Compiled f32 (CONVJIT_DTYPE 0); P::MODE
// picks the probe, and analysis/throughput_probes.cpp says how much work
// each launch does, which the timing divides.
//   0  stream: out[c] = in0[c] for the P::N 16-byte chunks, grid-stride
//      (HBM copy bandwidth, bytes read plus written, with N far past L2);
//   1  l2 read: thread t reads chunks (t + k * threads) mod P::SPAN, k <
//      P::ITERS, from a window of P::SPAN chunks that fits L2, and folds
//      them into out[t]'s chunk (L2 read bandwidth);
//   2  mma: every warp runs P::ITERS steps of four independent
//      m16n8k16 bf16 mma.sync on fragments from in0 and writes the
//      accumulators' sums (mma.sync's rate per SM);
//   3  ldmatrix: every warp loads P::ITERS conflict-free ldmatrix.x4 from
//      a swizzled shared tile and folds them (shared-memory wavefronts per
//      SM: an x4 is four);
//   4  chase: one thread follows P::ITERS links of a cycle through in0,
//      each chunk's first word naming the next chunk, from the chunk
//      out[0] names to the one it writes there (the latency of a load that
//      misses L2).
#include "common/grid.cuh"
#include "common/ldmatrix.cuh"
#include "common/mma.cuh"
#include "common/vector_memory.cuh"

namespace convjit_device {

__device__ __forceinline__ void probe_stream(const storage_t* in, storage_t* out, index_t chunks) {
  for (index_t c = thread_index(); c < chunks; c += thread_count())
    store_128(out + 4 * c, load_128(in + 4 * c));
}

__device__ __forceinline__ void probe_l2_read(const storage_t* in, storage_t* out, index_t span,
                                              index_t iters) {
  const index_t t = thread_index(), stride = thread_count();
  Vec128 fold = {};
  for (index_t k = 0; k < iters; ++k) {
    // span is a power of two: the window wraps without a division.
    const Vec128 v = load_128(in + 4 * ((t + k * stride) & (span - 1)));
    for (int w = 0; w < 4; ++w) fold.w[w] ^= v.w[w];
  }
  store_128(out + 4 * t, fold);
}

__device__ __forceinline__ void probe_mma(const storage_t* in, storage_t* out, index_t iters) {
  const index_t t = thread_index();
  unsigned a[4], b[2];
  for (int r = 0; r < 4; ++r) a[r] = storage_bits(in[8 * lane_id() + r]);
  for (int r = 0; r < 2; ++r) b[r] = storage_bits(in[8 * lane_id() + 4 + r]);
  // Four chains: one mma's latency hides behind the other three's issue.
  float d[4][4] = {};
  for (index_t k = 0; k < iters; ++k)
    for (int j = 0; j < 4; ++j) mma_m16n8k16_bf16(d[j], a, b, d[j]);
  float sum = 0;
  for (int j = 0; j < 4; ++j)
    for (int r = 0; r < 4; ++r) sum += d[j][r];
  out[t] = store(sum);
}

__device__ __forceinline__ void probe_ldmatrix(storage_t* out, index_t iters) {
  // Each warp's 32 rows of 128 bytes.  At step k lane l addresses its row's
  // chunk (k ^ l) % 8: a matrix's 8 rows, one per lane of an aligned group
  // of 8, then sit in 8 distinct chunks, so in distinct banks.
  CONVJIT_SHARED_ARRAY(unsigned short, tile, 64 * Problem::BLOCK);
  const unsigned lane = lane_id(), base = warp_id() * 32 * 64;
  for (int e = 0; e < 64; ++e) tile[base + 64 * lane + e] = static_cast<unsigned short>(lane + e);
  __syncthreads();
  unsigned fold = 0;
  for (index_t k = 0; k < iters; ++k) {
    const unsigned chunk = (static_cast<unsigned>(k) ^ lane) % 8;
    unsigned r[4];
    ldmatrix_x4(r, &tile[base + 64 * lane + 8 * chunk]);
    fold ^= r[0] ^ r[1] ^ r[2] ^ r[3];
  }
  out[thread_index()] = store(static_cast<float>(fold & 0xffffu));
}

__device__ __forceinline__ void probe_chase(const storage_t* in, storage_t* out, index_t iters) {
  if (thread_index() != 0) return;
  // Each launch goes on from where the last one stopped (out[0], zero at
  // first): launches timed one after another walk links the one before
  // did not leave in L2.
  unsigned at = storage_bits(out[0]);
  for (index_t k = 0; k < iters; ++k) at = load_128(in + 4 * static_cast<index_t>(at)).w[0];
  out[0] = store(value_of_bits(at));
}

}  // namespace convjit_device

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* in0,
                              const convjit_device::storage_t* /*in1*/,
                              convjit_device::storage_t* out, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  const index_t mode = P::MODE, n = P::N, span = P::SPAN, iters = P::ITERS;
  if (mode == 0) probe_stream(in0, out, n);
  if (mode == 1) probe_l2_read(in0, out, span, iters);
  if (mode == 2) probe_mma(in0, out, iters);
  if (mode == 3) probe_ldmatrix(out, iters);
  if (mode == 4) probe_chase(in0, out, iters);
}
