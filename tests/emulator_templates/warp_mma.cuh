// Test-only template (f32): each lane reads its fragment registers from
// in0[10 * thread ...] as bits (a[0..3], b[0..1], c[0..3]), runs one
// mma.sync with its warp, and writes d[0..3] to out[4 * thread ...].
// P::MODE: 0 m16n8k16 f16, 1 m16n8k16 bf16, 2 m16n8k8 tf32 (a and b are
// f32 values, rounded with to_tf32); 3 plants a bug: f16 with a[1] and
// a[2] swapped (a wrong fragment index, so a wrong product).
#include "common/grid.cuh"
#include "common/mma.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* in0,
                              const convjit_device::storage_t* /*in1*/,
                              convjit_device::storage_t* out, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* /*workspace*/) {
  using namespace convjit_device;
  typedef Problem P;
  const index_t i = thread_index();
  const storage_t* r = in0 + 10 * i;
  unsigned a[4], b[2];
  float c[4], d[4];
  for (int k = 0; k < 4; ++k) {
    const float x = load(r[k]);
    a[k] = P::MODE == 2 ? to_tf32(x) : __float_as_uint(x);
  }
  for (int k = 0; k < 2; ++k) {
    const float x = load(r[4 + k]);
    b[k] = P::MODE == 2 ? to_tf32(x) : __float_as_uint(x);
  }
  for (int k = 0; k < 4; ++k) c[k] = load(r[6 + k]);
  if (P::MODE == 3) {
    const unsigned swap = a[1];
    a[1] = a[2];
    a[2] = swap;
  }
  if (P::MODE == 1)
    mma_m16n8k16_bf16(d, a, b, c);
  else if (P::MODE == 2)
    mma_m16n8k8_tf32(d, a, b, c);
  else
    mma_m16n8k16_f16(d, a, b, c);
  for (int k = 0; k < 4; ++k) out[4 * i + k] = store(d[k]);
}
