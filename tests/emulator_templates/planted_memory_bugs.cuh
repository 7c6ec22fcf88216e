// Test-only template: copies in0 to out (P::N elements), with the global
// memory bug P::MODE selects planted, for the emulator to catch.
//   0 none   1 reads past the end of in0   2 reads before its start
//   3 writes to in0 (an input)   4 leaves odd elements of out unwritten
//   5 every thread also writes out[0] (a race)   6 reads the workspace
//   before any thread wrote it   7 writes past the end of out
#include "common/grid.cuh"

CONVJIT_KERNEL convjit_kernel(const convjit_device::storage_t* in0,
                              const convjit_device::storage_t* /*in1*/,
                              convjit_device::storage_t* out, float /*alpha*/, float /*beta*/,
                              convjit_device::scratch_t* workspace) {
  using namespace convjit_device;
  typedef Problem P;
  for (index_t i = thread_index(); i < P::N; i += thread_count()) {
    index_t from = i, to = i;
    if (P::MODE == 1 && i == P::N - 1) from = P::N;
    if (P::MODE == 2 && i == 0) from = -1;
    if (P::MODE == 7 && i == P::N - 1) to = P::N;
    float value = load(in0[from]);
    if (P::MODE == 3) const_cast<storage_t*>(in0)[i] = store(value);
    if (P::MODE == 4 && i % 2 == 1) continue;
    if (P::MODE == 5) out[0] = store(value);
    if (P::MODE == 6) value += workspace[i];
    out[to] = store(value);
  }
}
