/*
 * DiHydrogen's side of the DaCe library protocol, written from its source
 * (legacy/src/dnn_backend/dace_backend.cpp) and independent of convjit: it
 * loads lib<descriptor>.so files as DiHydrogen does and checks every call
 * against a direct convolution of its own.
 *
 *   dace_harness [--cuda] [--batch N]... LIBRARY...
 *
 * - dlopen(RTLD_LAZY); a failure is DiHydrogen's silent fall back to cuDNN:
 *   reported ("fallback"), and the exit status is 3 if nothing else failed.
 * - __dace_init_conv() with no arguments, also for a symbolic library;
 *   __dace_exit_conv and __program_conv must exist (DiHydrogen aborts).
 *   __dace_gpu_set_all_streams is required by DiHydrogen; the host libraries
 *   of `convjit export --device host` have none, so it is called when present
 *   (with --cuda it must be there).
 * - --cuda: operands, output and workspace in device memory (cuMemAlloc),
 *   and every call on a stream of its own that does not synchronise with
 *   the legacy default stream; the operands are copied in and the output
 *   out on that stream, so a library that ran elsewhere would be caught
 *   reading or writing out of order.  The CUDA driver is dlopened: the
 *   harness builds where no CUDA is installed.
 * - Per call: set the stream, then the workspace (sized by the library),
 *   then __program_conv(h, w-slot, x-slot, y-slot[, B], alpha, beta).
 * - A symbolic library runs at every --batch (default 2 and 3) through one
 *   handle; a concrete one at its own batch.
 *
 * Each output element must lie within 4·L·u·Σ|terms| of the exact result
 * (L the reduction length, u = 2^-24: f32's rounding of an L-term sum,
 * with room for reassociation), plus f32 rounding of alpha and beta; the
 * output buffer's elements outside the tensor (halo, padding) must be left
 * untouched, and with beta = 0 the output's old contents (NaN) never read.
 * Exit status: 0 all passed, 1 a check failed, 2 usage, 3 fallbacks only.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void* (*init_fn)(void);
typedef void (*exit_fn)(void*);
typedef int (*streams_fn)(void*, const void*);
typedef void (*program_fn)(void*, const void*, const void*, const void*, float, float);
typedef void (*program_b_fn)(void*, const void*, const void*, const void*, int, float, float);
typedef size_t (*ws_size_fn)(void*);
typedef size_t (*ws_size_b_fn)(void*, int);
typedef void (*ws_set_fn)(void*, void*);
typedef void (*ws_set_b_fn)(void*, void*, int);

enum direction { FWD, BWDDATA, BWDFILT };

/* The CUDA driver's calls the harness makes (cuda.h's signatures, by hand:
 * the harness builds without CUDA installed). */
typedef unsigned long long cu_ptr;
struct cuda {
  void* stream;
  int (*init)(unsigned);
  int (*device_get)(int*, int);
  int (*primary_ctx_retain)(void**, int);
  int (*ctx_set_current)(void*);
  int (*stream_create)(void**, unsigned);
  int (*stream_synchronize)(void*);
  int (*mem_alloc)(cu_ptr*, size_t);
  int (*mem_free)(cu_ptr);
  int (*htod_async)(cu_ptr, const void*, size_t, void*);
  int (*dtoh_async)(void*, cu_ptr, size_t, void*);
};
static struct cuda g_cuda; /* g_cuda.stream is NULL: the host */

static void cuda_check(int result, const char* what) {
  if (result == 0) return;
  fprintf(stderr, "dace_harness: %s failed: CUDA error %d\n", what, result);
  exit(1);
}

#define CONVJIT_HARNESS_CU(field, symbol)                          \
  do {                                                             \
    *(void**)&g_cuda.field = dlsym(driver, symbol);                \
    if (!g_cuda.field) return fprintf(stderr, "no %s\n", symbol), 0; \
  } while (0)

/* Device 0's primary context (the one the CUDA runtime, and so DiHydrogen,
 * uses) and a non-blocking stream. */
static int open_cuda(void) {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW);
  if (!driver) return fprintf(stderr, "dace_harness --cuda: %s\n", dlerror()), 0;
  CONVJIT_HARNESS_CU(init, "cuInit");
  CONVJIT_HARNESS_CU(device_get, "cuDeviceGet");
  CONVJIT_HARNESS_CU(primary_ctx_retain, "cuDevicePrimaryCtxRetain");
  CONVJIT_HARNESS_CU(ctx_set_current, "cuCtxSetCurrent");
  CONVJIT_HARNESS_CU(stream_create, "cuStreamCreate");
  CONVJIT_HARNESS_CU(stream_synchronize, "cuStreamSynchronize");
  CONVJIT_HARNESS_CU(mem_alloc, "cuMemAlloc_v2");
  CONVJIT_HARNESS_CU(mem_free, "cuMemFree_v2");
  CONVJIT_HARNESS_CU(htod_async, "cuMemcpyHtoDAsync_v2");
  CONVJIT_HARNESS_CU(dtoh_async, "cuMemcpyDtoHAsync_v2");
  int device = 0;
  void* context = NULL;
  cuda_check(g_cuda.init(0), "cuInit");
  cuda_check(g_cuda.device_get(&device, 0), "cuDeviceGet");
  cuda_check(g_cuda.primary_ctx_retain(&context, device), "cuDevicePrimaryCtxRetain");
  cuda_check(g_cuda.ctx_set_current(context), "cuCtxSetCurrent");
  cuda_check(g_cuda.stream_create(&g_cuda.stream, 1 /* CU_STREAM_NON_BLOCKING */),
             "cuStreamCreate");
  return 1;
}

/* Scratch memory where the library's calls run: device memory with --cuda. */
static void* scratch_alloc(size_t bytes) {
  if (!g_cuda.stream) return malloc(bytes ? bytes : 1);
  cu_ptr p = 0;
  cuda_check(g_cuda.mem_alloc(&p, bytes ? bytes : 1), "cuMemAlloc");
  return (void*)(uintptr_t)p;
}

static void scratch_free(void* p) {
  if (!g_cuda.stream) {
    free(p);
    return;
  }
  cuda_check(g_cuda.stream_synchronize(g_cuda.stream), "cuStreamSynchronize");
  cuda_check(g_cuda.mem_free((cu_ptr)(uintptr_t)p), "cuMemFree");
}

/* The 38 tokens of LBANN's grammar, spatial dims padded to 3 (size 1,
 * stride 0) in front, so every conv is 3D here. */
struct conv {
  int spatial, symbolic;
  enum direction dir;
  int64_t n, c, k, groups;
  int64_t x_sp[3], y_sp[3], f_sp[3];
  int64_t x_st[5], y_st[5]; /* N, C, then the 3 spatial */
  int64_t pad[3], stride[3], dil[3];
};

static int parse_ints(char** cursor, int64_t* out, int count, int* symbolic_first) {
  for (int i = 0; i < count; ++i) {
    char* token = strsep(cursor, "_");
    if (!token || !*token) return 0;
    if (i == 0 && symbolic_first && strcmp(token, "B") == 0) {
      *symbolic_first = 1, out[0] = 0;
      continue;
    }
    char* end;
    out[i] = strtoll(token, &end, 10);
    if (*end) return 0;
  }
  return 1;
}

/* Spreads a 5-slot shape or stride list (N, C, s0, s1, s2 with trailing
 * zeros for fewer dims) into N, C and 3 spatial entries padded in front. */
static void spread(const int64_t five[5], int spatial, int64_t pad_value, int64_t nc[2],
                   int64_t sp[3]) {
  nc[0] = five[0], nc[1] = five[1];
  for (int i = 0; i < 3; ++i) {
    const int from = i - (3 - spatial);
    sp[i] = from < 0 ? pad_value : five[2 + from];
  }
}

static void spread3(const int64_t three[3], int spatial, int64_t pad_value, int64_t out[3]) {
  for (int i = 0; i < 3; ++i) {
    const int from = i - (3 - spatial);
    out[i] = from < 0 ? pad_value : three[from];
  }
}

static int parse_name(const char* file, struct conv* cv) {
  const char* base = strrchr(file, '/');
  base = base ? base + 1 : file;
  size_t len = strlen(base);
  if (strncmp(base, "lib", 3) != 0 || len < 7 || strcmp(base + len - 3, ".so") != 0) return 0;
  char* copy = strndup(base + 3, len - 6);
  char* cursor = copy;
  int ok = 0;
  memset(cv, 0, sizeof *cv);
  char* head = strsep(&cursor, "_");
  if (!head || sscanf(head, "conv%dd", &cv->spatial) != 1 || cv->spatial < 1 || cv->spatial > 3)
    goto done;
  int64_t xs[5], xst[5], ws[5], ys[5], yst[5], pads[3], strides[3], dils[3], groups;
  int sym_x = 0, sym_y = 0;
  if (!parse_ints(&cursor, xs, 5, &sym_x) || !parse_ints(&cursor, xst, 5, NULL) ||
      !parse_ints(&cursor, ws, 5, NULL) || !parse_ints(&cursor, ys, 5, &sym_y) ||
      !parse_ints(&cursor, yst, 5, NULL) || !parse_ints(&cursor, pads, 3, NULL) ||
      !parse_ints(&cursor, strides, 3, NULL) || !parse_ints(&cursor, dils, 3, NULL) ||
      !parse_ints(&cursor, &groups, 1, NULL))
    goto done;
  char* op = strsep(&cursor, "_");
  if (!op || cursor) goto done; /* an extension: not LBANN's grammar */
  if (strcmp(op, "fwd") == 0) cv->dir = FWD;
  else if (strcmp(op, "bwddata") == 0) cv->dir = BWDDATA;
  else if (strcmp(op, "bwdfilt") == 0) cv->dir = BWDFILT;
  else goto done;
  if (sym_x != sym_y) goto done;
  cv->symbolic = sym_x;
  int64_t nc[2], st_nc[2];
  spread(xs, cv->spatial, 1, nc, cv->x_sp);
  cv->n = nc[0], cv->c = nc[1];
  spread(xst, cv->spatial, 0, st_nc, cv->x_st + 2);
  cv->x_st[0] = st_nc[0], cv->x_st[1] = st_nc[1];
  spread(ys, cv->spatial, 1, nc, cv->y_sp);
  cv->k = nc[1];
  spread(yst, cv->spatial, 0, st_nc, cv->y_st + 2);
  cv->y_st[0] = st_nc[0], cv->y_st[1] = st_nc[1];
  int64_t wnc[2];
  spread(ws, cv->spatial, 1, wnc, cv->f_sp);
  spread3(pads, cv->spatial, 0, cv->pad);
  spread3(strides, cv->spatial, 1, cv->stride);
  spread3(dils, cv->spatial, 1, cv->dil);
  cv->groups = groups;
  ok = wnc[0] == cv->k && groups > 0 && cv->c % groups == 0 && wnc[1] == cv->c / groups;
done:
  free(copy);
  return ok;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static float uniform(void) {
  g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((double)(g_rng >> 40) / 16777216.0) * 2.0f - 1.0f;
}

static int64_t span(int64_t batch, int64_t ch, const int64_t sp[3], const int64_t st[5]) {
  int64_t last = (batch - 1) * st[0] + (ch - 1) * st[1];
  for (int i = 0; i < 3; ++i) last += (sp[i] - 1) * st[2 + i];
  return last + 1;
}

struct tensor {
  float* data;
  int64_t size;
  char* logical; /* 1 where an element of the tensor lies */
};

static struct tensor make_tensor(int64_t batch, int64_t ch, const int64_t sp[3],
                                 const int64_t st[5]) {
  struct tensor t;
  t.size = span(batch, ch, sp, st);
  t.data = malloc((size_t)t.size * sizeof(float));
  t.logical = calloc((size_t)t.size, 1);
  for (int64_t i = 0; i < t.size; ++i) t.data[i] = uniform();
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t c = 0; c < ch; ++c)
      for (int64_t a = 0; a < sp[0]; ++a)
        for (int64_t b = 0; b < sp[1]; ++b)
          for (int64_t d = 0; d < sp[2]; ++d)
            t.logical[n * st[0] + c * st[1] + a * st[2] + b * st[3] + d * st[4]] = 1;
  return t;
}

static void free_tensor(struct tensor* t) { free(t->data), free(t->logical); }

struct problem {
  struct tensor x, w, y;
  int64_t w_st[5];
  double* exact;     /* the op's result per output element, in f64 */
  double* magnitude; /* the sum of its terms' magnitudes */
  int64_t length;    /* terms per output element, at most */
};

/* Random operands at `batch` and the exact result of the op on them. */
static struct problem make_problem(const struct conv* cv, int64_t batch) {
  struct problem p;
  const int64_t cg = cv->c / cv->groups, kg = cv->k / cv->groups;
  p.w_st[4] = 1, p.w_st[3] = cv->f_sp[2], p.w_st[2] = cv->f_sp[1] * cv->f_sp[2];
  p.w_st[1] = cv->f_sp[0] * p.w_st[2], p.w_st[0] = cg * p.w_st[1];
  p.x = make_tensor(batch, cv->c, cv->x_sp, cv->x_st);
  p.w = make_tensor(cv->k, cg, cv->f_sp, p.w_st);
  p.y = make_tensor(batch, cv->k, cv->y_sp, cv->y_st);
  const struct tensor* out = cv->dir == FWD ? &p.y : cv->dir == BWDDATA ? &p.x : &p.w;
  p.exact = calloc((size_t)out->size, sizeof(double));
  p.magnitude = calloc((size_t)out->size, sizeof(double));
  p.length = cv->dir == FWD ? cg : cv->dir == BWDDATA ? kg : batch;
  for (int i = 0; i < 3; ++i) p.length *= cv->dir == BWDFILT ? cv->y_sp[i] : cv->f_sp[i];
  const int64_t* xs = cv->x_st;
  const int64_t* ys = cv->y_st;
  for (int64_t n = 0; n < batch; ++n)
    for (int64_t k = 0; k < cv->k; ++k)
      for (int64_t o0 = 0; o0 < cv->y_sp[0]; ++o0)
        for (int64_t o1 = 0; o1 < cv->y_sp[1]; ++o1)
          for (int64_t o2 = 0; o2 < cv->y_sp[2]; ++o2) {
            const int64_t o[3] = {o0, o1, o2};
            const int64_t yo = n * ys[0] + k * ys[1] + o0 * ys[2] + o1 * ys[3] + o2 * ys[4];
            const int64_t ci0 = (k / kg) * cg;
            for (int64_t c = 0; c < cg; ++c)
              for (int64_t f0 = 0; f0 < cv->f_sp[0]; ++f0) {
                const int64_t i0 = o0 * cv->stride[0] - cv->pad[0] + f0 * cv->dil[0];
                if (i0 < 0 || i0 >= cv->x_sp[0]) continue;
                for (int64_t f1 = 0; f1 < cv->f_sp[1]; ++f1) {
                  const int64_t i1 = o1 * cv->stride[1] - cv->pad[1] + f1 * cv->dil[1];
                  if (i1 < 0 || i1 >= cv->x_sp[1]) continue;
                  const int64_t x_row = n * xs[0] + (ci0 + c) * xs[1] + i0 * xs[2] + i1 * xs[3];
                  const int64_t w_row = k * p.w_st[0] + c * p.w_st[1] + f0 * p.w_st[2] +
                                        f1 * p.w_st[3];
                  for (int64_t f2 = 0; f2 < cv->f_sp[2]; ++f2) {
                    const int64_t i2 = o[2] * cv->stride[2] - cv->pad[2] + f2 * cv->dil[2];
                    if (i2 < 0 || i2 >= cv->x_sp[2]) continue;
                    const int64_t xo = x_row + i2 * xs[4], wo = w_row + f2;
                    const double a = cv->dir == FWD ? p.x.data[xo] : p.y.data[yo];
                    const double b = cv->dir == BWDFILT ? p.x.data[xo] : p.w.data[wo];
                    const int64_t at = cv->dir == FWD ? yo : cv->dir == BWDDATA ? xo : wo;
                    p.exact[at] += a * b, p.magnitude[at] += fabs(a * b);
                  }
                }
              }
          }
  return p;
}

static void free_problem(struct problem* p) {
  free(p->exact), free(p->magnitude);
  free_tensor(&p->x), free_tensor(&p->w), free_tensor(&p->y);
}

/* One call through the library, as DiHydrogen makes it: the stream, the
 * workspace, the program. */
static void call_library(void* lib, void* h, const struct conv* cv, int64_t batch,
                         void* const slots[3], float alpha, float beta) {
  streams_fn streams = (streams_fn)dlsym(lib, "__dace_gpu_set_all_streams");
  void* size_fn = dlsym(lib, "__dace_get_external_memory_size_GPU_Global");
  void* set_fn = dlsym(lib, "__dace_set_external_memory_GPU_Global");
  void* program = dlsym(lib, "__program_conv");
  void* workspace = NULL;
  if (streams) streams(h, g_cuda.stream);
  if (size_fn) {
    size_t bytes = cv->symbolic ? ((ws_size_b_fn)size_fn)(h, (int)batch) : ((ws_size_fn)size_fn)(h);
    workspace = scratch_alloc(bytes);
    if (cv->symbolic) ((ws_set_b_fn)set_fn)(h, workspace, (int)batch);
    else ((ws_set_fn)set_fn)(h, workspace);
  }
  if (cv->symbolic)
    ((program_b_fn)program)(h, slots[0], slots[1], slots[2], (int)batch, alpha, beta);
  else
    ((program_fn)program)(h, slots[0], slots[1], slots[2], alpha, beta);
  if (workspace) scratch_free(workspace);
}

/* The call on the problem's operands (w, x, y), where they live: with
 * --cuda each is copied to device memory on the stream, and the output back
 * on it after the call. */
static void run_call(void* lib, void* h, const struct conv* cv, int64_t batch,
                     struct problem* p, struct tensor* out, float alpha, float beta) {
  struct tensor* operands[3] = {&p->w, &p->x, &p->y};
  void* slots[3];
  for (int i = 0; i < 3; ++i) {
    slots[i] = operands[i]->data;
    if (!g_cuda.stream) continue;
    const size_t bytes = (size_t)operands[i]->size * sizeof(float);
    slots[i] = scratch_alloc(bytes);
    cuda_check(g_cuda.htod_async((cu_ptr)(uintptr_t)slots[i], operands[i]->data, bytes,
                                 g_cuda.stream), "cuMemcpyHtoDAsync");
  }
  call_library(lib, h, cv, batch, slots, alpha, beta);
  if (!g_cuda.stream) return;
  for (int i = 0; i < 3; ++i) {
    if (operands[i] == out)
      cuda_check(g_cuda.dtoh_async(out->data, (cu_ptr)(uintptr_t)slots[i],
                                   (size_t)out->size * sizeof(float), g_cuda.stream),
                 "cuMemcpyDtoHAsync");
    scratch_free(slots[i]);
  }
}

/* Calls the library with alpha and beta on the problem's operands, its
 * output first filled with random values (NaN where beta is 0), and checks
 * the result; returns the failures. */
static int check_call(void* lib, void* h, const struct conv* cv, int64_t batch,
                      struct problem* p, float alpha, float beta) {
  struct tensor* out = cv->dir == FWD ? &p->y : cv->dir == BWDDATA ? &p->x : &p->w;
  for (int64_t i = 0; i < out->size; ++i) out->data[i] = out->logical[i] && beta == 0.0f ? NAN : uniform();
  float* before = malloc((size_t)out->size * sizeof(float));
  memcpy(before, out->data, (size_t)out->size * sizeof(float));
  run_call(lib, h, cv, batch, p, out, alpha, beta);
  int failures = 0;
  const double u = 1.0 / 16777216.0;
  for (int64_t i = 0; i < out->size && failures < 5; ++i) {
    const float got = out->data[i];
    if (!out->logical[i]) {
      if (memcmp(&got, &before[i], sizeof got) != 0)
        ++failures, fprintf(stderr, "  element %lld outside the tensor was written\n", (long long)i);
      continue;
    }
    const double prev = beta == 0.0f ? 0.0 : before[i];
    const double want = alpha * p->exact[i] + beta * prev;
    const double bound = 4.0 * (double)p->length * u * fabs(alpha) * p->magnitude[i] +
                         2.0 * u * (fabs(alpha * p->exact[i]) + fabs(beta * prev)) + 1e-30;
    if (!(fabs(got - want) <= bound))
      ++failures, fprintf(stderr, "  element %lld: %.9g, want %.9g (bound %.3g)\n", (long long)i,
                          got, want, bound);
  }
  free(before);
  return failures;
}

int main(int argc, char** argv) {
  int64_t batches[16];
  int batch_count = 0, failed = 0, fell_back = 0, libraries = 0;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc && batch_count < 16) {
      batches[batch_count++] = atoll(argv[++i]);
      continue;
    }
    if (strcmp(argv[i], "--cuda") == 0) {
      if (!g_cuda.stream && !open_cuda()) return 2;
      continue;
    }
    ++libraries;
    struct conv cv;
    if (!parse_name(argv[i], &cv)) {
      fprintf(stderr, "%s: not lib<descriptor>.so in LBANN's grammar\n", argv[i]);
      return 2;
    }
    void* lib = dlopen(argv[i], RTLD_LAZY);
    if (!lib) {
      printf("fallback %s: %s\n", argv[i], dlerror());
      ++fell_back;
      continue;
    }
    init_fn init = (init_fn)dlsym(lib, "__dace_init_conv");
    exit_fn exit_conv = (exit_fn)dlsym(lib, "__dace_exit_conv");
    if (!init || !exit_conv || !dlsym(lib, "__program_conv") ||
        (g_cuda.stream && !dlsym(lib, "__dace_gpu_set_all_streams"))) {
      printf("FAIL %s: a required symbol is missing (DiHydrogen aborts)\n", argv[i]);
      ++failed;
      continue;
    }
    if (dlsym(lib, "__dace_get_external_memory_size_GPU_Global") &&
        !dlsym(lib, "__dace_set_external_memory_GPU_Global")) {
      printf("FAIL %s: a workspace size but no setter (DiHydrogen aborts)\n", argv[i]);
      ++failed;
      continue;
    }
    void* h = init();
    const int64_t defaults[2] = {2, 3};
    const int64_t* runs = cv.symbolic ? (batch_count ? batches : defaults) : &cv.n;
    const int run_count = cv.symbolic ? (batch_count ? batch_count : 2) : 1;
    int bad = 0;
    for (int r = 0; r < run_count; ++r) {
      struct problem p = make_problem(&cv, runs[r]);
      bad += check_call(lib, h, &cv, runs[r], &p, 1.0f, 0.0f);
      bad += check_call(lib, h, &cv, runs[r], &p, 0.5f, 0.25f);
      free_problem(&p);
    }
    exit_conv(h);
    dlclose(lib);
    printf("%s %s\n", bad ? "FAIL" : "ok", argv[i]);
    failed += bad != 0;
  }
  if (libraries == 0) {
    fprintf(stderr, "usage: dace_harness [--cuda] [--batch N]... LIBRARY...\n");
    return 2;
  }
  printf("%d libraries: %d failed, %d fell back\n", libraries, failed, fell_back);
  return failed ? 1 : fell_back ? 3 : 0;
}
