// Test-only template (f32): each warp stages four 8x8 matrices of 16-bit
// values (in0[256 * warp ...], integers below 65536 as f32) in shared
// memory, lane l writing row (l + 1) % 32 (matrix row/8, row row%8), and
// after a barrier loads them with ldmatrix, lane l addressing row l.  Each
// lane writes the halves of its registers, low half first, to
// out[28 * thread ...]: x1 (2 values), x2 (4), x4 (8), then the same with
// .trans.  P::MODE plants a bug: 1 no barrier between the shared stores
// and ldmatrix (a race), 2 lane l addresses one element past its row (not
// 16-byte aligned).
#include "common/grid.cuh"
#include "common/ldmatrix.cuh"

template <int N, class Out>
__device__ __forceinline__ void write_halves(Out* out, const unsigned (&r)[N]) {
  using namespace convjit_device;
  for (int k = 0; k < N; ++k) {
    out[2 * k] = store(static_cast<float>(r[k] & 0xffffu));
    out[2 * k + 1] = store(static_cast<float>(r[k] >> 16));
  }
}

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* in0,
                              const convjit_device::storage_t* /*in1*/,
                              convjit_device::storage_t* out, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  CONVJIT_SHARED_ARRAY(unsigned short, tile, 8 * P::BLOCK + 8);
  const index_t i = thread_index();
  const unsigned lane = lane_id(), base = warp_id() * 256;
  const unsigned row = (lane + 1) % 32;
  const index_t from = i - lane + row;  // the global thread owning `row`'s data
  for (int k = 0; k < 8; ++k)
    tile[base + 8 * row + k] = static_cast<unsigned short>(load(in0[8 * from + k]));
  if (P::MODE != 1) __syncthreads();
  const unsigned at = base + 8 * lane + (P::MODE == 2 ? 1 : 0);
  storage_t* o = out + 28 * i;
  unsigned r1[1], r2[2], r4[4];
  ldmatrix_x1(r1, &tile[at]);
  write_halves(o, r1);
  ldmatrix_x2(r2, &tile[at]);
  write_halves(o + 2, r2);
  ldmatrix_x4(r4, &tile[at]);
  write_halves(o + 6, r4);
  ldmatrix_x1_trans(r1, &tile[at]);
  write_halves(o + 14, r1);
  ldmatrix_x2_trans(r2, &tile[at]);
  write_halves(o + 16, r2);
  ldmatrix_x4_trans(r4, &tile[at]);
  write_halves(o + 20, r4);
}
