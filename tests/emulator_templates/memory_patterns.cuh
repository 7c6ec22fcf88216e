// Test-only template (f32) for the memory counters: access patterns whose
// cost is known by hand.  P::MODE picks one:
//   0  a coalesced copy in 16-byte vectors: thread i moves in0[4i .. 4i+3]
//      to out[4i ...]; each warp request is 16 sectors, all ideal;
//   1  thread i copies in0[2i] to out[i]: 8 sectors a load, twice the ideal 4;
//   2  thread i copies in0[8i] to out[i]: 32 sectors a load, 8 times the ideal;
//   5  mode 0 with its vector load split into four 4-byte loads (a planted
//      bug): four requests of 16 sectors each, 4 times the ideal;
//   3  each warp stages 32 rows of 128 bytes (64 16-bit values) in shared
//      memory and loads four 8x8 matrices with ldmatrix.x4, lane l
//      addressing row l's first 16 bytes, which the row's XOR swizzle
//      stores at chunk l % 8: each matrix's 8 rows fall in distinct banks
//      (1 wavefront);
//   4  the same without the swizzle: every row of a matrix at chunk 0, the
//      same 4 banks, 8 wavefronts a matrix.
// Modes 3 and 4 write each lane's four registers to out[4i ...].
#include "common/grid.cuh"
#include "common/ldmatrix.cuh"
#include "common/vector_memory.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* in0,
                              const convjit_device::storage_t* /*in1*/,
                              convjit_device::storage_t* out, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  const index_t i = thread_index();
  if (P::MODE == 0) store_128(out + 4 * i, load_128(in0 + 4 * i));
  if (P::MODE == 1) out[i] = store(load(in0[2 * i]));
  if (P::MODE == 2) out[i] = store(load(in0[8 * i]));
  if (P::MODE == 5) {
    Vec128 v;
    for (int k = 0; k < 4; ++k) v.w[k] = __float_as_uint(load(in0[4 * i + k]));
    store_128(out + 4 * i, v);
  }
  if (P::MODE < 3 || P::MODE == 5) return;
  CONVJIT_SHARED_ARRAY(unsigned short, tile, 64 * P::BLOCK);
  const unsigned lane = lane_id(), base = warp_id() * 32 * 64;
  for (int k = 0; k < 64; ++k) tile[base + 64 * lane + k] = static_cast<unsigned short>(k);
  __syncthreads();
  // Every lane reads its row's 16-byte chunk 0, stored at chunk 0 ^ (row % 8)
  // when swizzled.
  const unsigned chunk = P::MODE == 3 ? lane % 8 : 0;
  unsigned r[4];
  ldmatrix_x4(r, &tile[base + 64 * lane + 8 * chunk]);
  for (int k = 0; k < 4; ++k) out[4 * i + k] = store(static_cast<float>(r[k] & 0xffffu));
}
