/*
 * convjit tuned-kernel library ABI, version 2 (convjit also loads version 1
 * libraries: version 2 only appended `norm` to the arguments).
 *
 * A tuned library is a shared object named lib<descriptor>.so placed in a
 * directory of the cache search path (see the README).  convjit accepts two
 * ABIs: LBANN's DaCe ABI (convolutions, f32, as existing LBANN libraries
 * export it) and this one, which covers every op and dtype, the host and
 * CUDA devices, and says which descriptor it implements.
 *
 * A library in this ABI exports, with C linkage:
 *
 *   uint32_t    convjit_kernel_abi_version(void);   returns CONVJIT_KERNEL_ABI_VERSION
 *   const char* convjit_kernel_descriptor(void);    the canonical descriptor name it
 *                                                    implements (concrete or with batch B);
 *                                                    must equal the file's lib<...>.so name
 *   int         convjit_kernel_device(void);        CONVJIT_DEVICE_HOST or CONVJIT_DEVICE_CUDA
 *   int         convjit_kernel_run(const convjit_kernel_args_t* args);
 *                                                    0 on success, anything else is a failure
 * and optionally:
 *   size_t      convjit_kernel_workspace_size(int64_t batch);
 *                                                    bytes of scratch memory needed for `batch`
 *
 * Pointers in args follow the descriptor's slots: x (conv fwd/bwdfilt, pool
 * fwd, max-pool bwd, resize fwd, batchnorm), w (conv fwd/bwddata), dy (conv
 * bwddata/bwdfilt, pool bwd, bias grad, resize bwd, batchnorm bwd) and out
 * (y, dx, dw or db; NULL for a batchnorm backward asked for no dx).
 * Scaling is cuDNN's: out = alpha * op + beta * out, and out must not be
 * read when beta == 0.  A batchnorm's per-channel operands (f32, f64 for
 * f64 data; NULL where the call has none, as the C API's batchnorm calls
 * say) come in `norm`, version 2 on: a batchnorm library must declare
 * version 2, and `norm` is NULL for every other op.
 * On the CUDA device, pointers are device memory and the work is enqueued
 * on `stream` (a CUstream); on the host, stream is NULL and the call is
 * synchronous.  convjit_kernel_run must be reentrant: convjit calls it from
 * several threads at once (with distinct arguments), except that calls
 * sharing the workspace convjit allocated for the library are serialised.
 */
#ifndef CONVJIT_KERNEL_ABI_H
#define CONVJIT_KERNEL_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CONVJIT_KERNEL_ABI_VERSION 2u
/* The oldest library version convjit loads. */
#define CONVJIT_KERNEL_ABI_OLDEST_VERSION 1u

/* A batchnorm's per-channel operands (version 2). */
typedef struct convjit_kernel_norm_args {
  const void* scale;   /* gamma, or NULL for 1 */
  const void* shift;   /* beta, or NULL for 0 */
  void* running_mean;  /* fwd training: updated (NULL: no update); inference: read */
  void* running_var;
  void* saved_mean;    /* fwd training: written (may be NULL); bwd training: read */
  void* saved_invstd;
  void* scale_grad;    /* bwd: written where the descriptor asks for it */
  void* shift_grad;
  double momentum;     /* fwd training's running update */
} convjit_kernel_norm_args_t;

typedef struct convjit_kernel_args {
  uint32_t abi_version; /* CONVJIT_KERNEL_ABI_VERSION of the caller */
  const void* x;
  const void* w;
  const void* dy;
  void* out;
  double alpha;
  double beta;
  void* workspace; /* at least convjit_kernel_workspace_size(batch) bytes, or NULL if 0 */
  size_t workspace_bytes;
  void* stream;
  int64_t batch; /* the call's batch size (what B stands for in a symbolic library) */
  /* Version 2: a batchnorm's per-channel operands; NULL for other ops.  A
     version 1 library never reads it. */
  const convjit_kernel_norm_args_t* norm;
} convjit_kernel_args_t;

typedef uint32_t (*convjit_kernel_abi_version_fn)(void);
typedef const char* (*convjit_kernel_descriptor_fn)(void);
typedef int (*convjit_kernel_device_fn)(void);
typedef int (*convjit_kernel_run_fn)(const convjit_kernel_args_t* args);
typedef size_t (*convjit_kernel_workspace_size_fn)(int64_t batch);

#ifdef __cplusplus
}
#endif

#endif /* CONVJIT_KERNEL_ABI_H */
