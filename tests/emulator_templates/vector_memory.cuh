// Test-only template (f32): thread i loads in0[4i .. 4i+3] with one
// 128-bit load, stores it to shared memory with one 128-bit store, and,
// after a barrier, writes its right neighbour's four values (in the block)
// to out[4i ...] with 64-bit shared loads and 64-bit global stores.
// P::MODE plants a bug: 1 the global load starts one element late (not
// 16-byte aligned), 2 the shared store does.
#include "common/grid.cuh"
#include "common/vector_memory.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* in0,
                              const convjit_device::storage_t* /*in1*/,
                              convjit_device::storage_t* out, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  CONVJIT_SHARED_ARRAY(float, tile, 4 * P::BLOCK + 4);
  const index_t i = thread_index(), t = threadIdx.x;
  const Vec128 v = load_128(in0 + 4 * i + (P::MODE == 1 ? 1 : 0));
  store_128(&tile[4 * t + (P::MODE == 2 ? 1 : 0)], v);
  __syncthreads();
  const index_t from = 4 * ((t + 1) % P::BLOCK);
  store_64(out + 4 * i, load_64(&tile[from]));
  store_64(out + 4 * i + 2, load_64(&tile[from + 2]));
}
