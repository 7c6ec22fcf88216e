// A host library in LBANN's DaCe ABI for the tuned-library tests.  Instead
// of computing the op it writes a recognisable record into its output:
//   out[0] marker   out[1] alpha   out[2] beta   out[3] B (-1 if concrete)
//   out[4] 1 if the workspace was set and writable   out[5], out[6] the first
//   element of the two inputs, in DaCe's pointer order   out[7] inits so far
// Build options: DACE_DIRECTION (0 fwd, 1 bwddata, 2 bwdfilt: which pointer
// is the output), DACE_SYMBOLIC, DACE_WORKSPACE_BYTES, DACE_MARKER,
// DACE_WITHOUT_EXIT, DACE_GPU (exports __dace_gpu_set_all_streams, so it is
// a GPU library).  With CONVJIT_TEST_EXIT_LOG set, exit appends "exit" and a
// GPU library's init appends "init".
#include <cstdio>
#include <cstdlib>
#include <cstring>

#ifndef DACE_MARKER
#define DACE_MARKER 1
#endif
#ifndef DACE_WORKSPACE_BYTES
#define DACE_WORKSPACE_BYTES 0
#endif

namespace {
struct State {
  int batch;
  void* workspace;
};
int g_inits = 0;

void log_event(const char* event) {
  if (const char* log = std::getenv("CONVJIT_TEST_EXIT_LOG")) {
    if (FILE* f = std::fopen(log, "a")) {
      std::fputs(event, f);
      std::fclose(f);
    }
  }
}

void count_init() {
  ++g_inits;
#ifdef DACE_GPU
  log_event("init\n");
#endif
}

void record(State* s, float* out, const float* in0, const float* in1, float alpha, float beta) {
  out[0] = DACE_MARKER;
  out[1] = alpha;
  out[2] = beta;
  out[3] = static_cast<float>(s->batch);
  out[4] = 0;
  if (DACE_WORKSPACE_BYTES > 0 && s->workspace != nullptr) {
    std::memset(s->workspace, 0x5a, DACE_WORKSPACE_BYTES);
    out[4] = 1;
  }
  out[5] = in0[0];
  out[6] = in1[0];
  out[7] = static_cast<float>(g_inits);
}

// DaCe order: fwd (w, x, y), bwddata (w, dx, dy), bwdfilt (dw, x, dy).
void run(State* s, void* p0, void* p1, void* p2, float alpha, float beta) {
  auto* a = static_cast<float*>(p0);
  auto* b = static_cast<float*>(p1);
  auto* c = static_cast<float*>(p2);
  if (DACE_DIRECTION == 0) record(s, c, a, b, alpha, beta);
  if (DACE_DIRECTION == 1) record(s, b, a, c, alpha, beta);
  if (DACE_DIRECTION == 2) record(s, a, b, c, alpha, beta);
}
}  // namespace

extern "C" {

#ifdef DACE_SYMBOLIC
void* __dace_init_conv(int B) {
  count_init();
  return new State{B, nullptr};
}
void __program_conv(void* h, void* p0, void* p1, void* p2, int B, float alpha, float beta) {
  static_cast<State*>(h)->batch = B;
  run(static_cast<State*>(h), p0, p1, p2, alpha, beta);
}
#if DACE_WORKSPACE_BYTES > 0
size_t __dace_get_external_memory_size_GPU_Global(void*, int) { return DACE_WORKSPACE_BYTES; }
void __dace_set_external_memory_GPU_Global(void* h, void* ws, int) {
  static_cast<State*>(h)->workspace = ws;
}
#endif
#else
void* __dace_init_conv() {
  count_init();
  return new State{-1, nullptr};
}
void __program_conv(void* h, void* p0, void* p1, void* p2, float alpha, float beta) {
  run(static_cast<State*>(h), p0, p1, p2, alpha, beta);
}
#if DACE_WORKSPACE_BYTES > 0
size_t __dace_get_external_memory_size_GPU_Global(void*) { return DACE_WORKSPACE_BYTES; }
void __dace_set_external_memory_GPU_Global(void* h, void* ws) {
  static_cast<State*>(h)->workspace = ws;
}
#endif
#endif

#ifndef DACE_WITHOUT_EXIT
int __dace_exit_conv(void* h) {
  log_event("exit\n");
  delete static_cast<State*>(h);
  return 0;
}
#endif

#ifdef DACE_GPU
void __dace_gpu_set_all_streams(void*, const void*) {}
#endif

}  // extern "C"
