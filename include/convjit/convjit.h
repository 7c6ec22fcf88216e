/*
 * convjit C API.
 *
 * A small, stable C ABI over the convjit dispatcher.  Every entry point
 * returns a convjit_status_t; on failure, convjit_last_error_message()
 * returns a thread-local, human-readable explanation that names the
 * offending field and the fix.
 *
 * Conventions
 * - Tensors are described by convjit_tensor_desc_t: a dtype, a rank of 3, 4
 *   or 5 (N, C, then 1 to 3 spatial dims) and per-dim strides in elements.
 *   Any non-negative strides are accepted: NCHW, NHWC, halo buffers with
 *   padded strides.  Outputs must not overlap themselves.
 * - Scaling follows cuDNN: out = alpha * op(inputs) + beta * out.  With
 *   beta == 0 the previous contents of out are never read, so NaN or
 *   garbage there cannot leak into the result.
 * - exec may be NULL: the host device, no workspace, no stream.
 */
#ifndef CONVJIT_CONVJIT_H
#define CONVJIT_CONVJIT_H

#include <stddef.h>
#include <stdint.h>

#if defined(CONVJIT_BUILDING_LIBRARY)
#define CONVJIT_API __attribute__((visibility("default")))
#else
#define CONVJIT_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define CONVJIT_MAX_RANK 5
#define CONVJIT_MAX_SPATIAL_DIMS 3

typedef enum convjit_status {
  CONVJIT_STATUS_SUCCESS = 0,
  /* An argument is inconsistent or out of range; the message names it. */
  CONVJIT_STATUS_INVALID_ARGUMENT = 1,
  /* Valid, but no backend in this build can serve it (e.g. dtype). */
  CONVJIT_STATUS_UNSUPPORTED = 2,
  /* The requested device or backend is not available on this machine. */
  CONVJIT_STATUS_NOT_AVAILABLE = 3,
  CONVJIT_STATUS_OUT_OF_MEMORY = 4,
  CONVJIT_STATUS_EXECUTION_FAILED = 5,
  CONVJIT_STATUS_INTERNAL_ERROR = 6
} convjit_status_t;

typedef enum convjit_dtype {
  CONVJIT_DTYPE_F32 = 0,
  CONVJIT_DTYPE_F16 = 1,  /* IEEE binary16, f32 accumulation */
  CONVJIT_DTYPE_BF16 = 2, /* bfloat16, f32 accumulation */
  CONVJIT_DTYPE_F64 = 3   /* host reference only */
} convjit_dtype_t;

typedef enum convjit_layout {
  CONVJIT_LAYOUT_NCHW = 0, /* channels first: N, C, [D,] [H,] W */
  CONVJIT_LAYOUT_NHWC = 1  /* channels last:  N, [D,] [H,] W, C */
} convjit_layout_t;

typedef enum convjit_device_kind {
  CONVJIT_DEVICE_HOST = 0,
  CONVJIT_DEVICE_CUDA = 1
} convjit_device_kind_t;

typedef struct convjit_device {
  convjit_device_kind_t kind;
  int ordinal; /* CUDA device ordinal; ignored for the host */
} convjit_device_t;

/* Where and how an operation runs.  NULL means: host, no workspace. */
typedef struct convjit_exec {
  convjit_device_t device;
  void* stream;    /* cudaStream_t / CUstream; NULL on the host */
  void* workspace; /* optional caller-provided scratch memory */
  size_t workspace_bytes;
  /* The filters' version, for a conv fwd or bwddata whose kernel reads w
   * through a copy in another order (a Hopper or GEMM kernel given K C R S
   * filters).  0: w may have changed since any earlier call; the kernel
   * copies it every call.  Nonzero: a promise that w holds what it held at
   * this kernel's last call on this stream with the same w pointer and the
   * same version, so the kernel may reuse the copy it made then and skip its
   * first pass.  A trainer passes its weights' update count (plus 1); a call
   * that breaks the promise reads the old filters.  Only the kernel's own
   * workspace keeps a copy: with a caller's workspace w is copied every call. */
  uint64_t w_version;
} convjit_exec_t;

/* dims/strides are listed in logical order N, C, spatial...; entries at
 * index >= rank are ignored.  Strides are in elements, not bytes. */
typedef struct convjit_tensor_desc {
  convjit_dtype_t dtype;
  int rank;
  int64_t dims[CONVJIT_MAX_RANK];
  int64_t strides[CONVJIT_MAX_RANK];
} convjit_tensor_desc_t;

typedef enum convjit_conv_direction {
  CONVJIT_CONV_FWD = 0,     /* y  = conv(x, w)                   */
  CONVJIT_CONV_BWDDATA = 1, /* dx = conv_transpose(dy, w)        */
  CONVJIT_CONV_BWDFILT = 2  /* dw = correlate(x, dy)             */
} convjit_conv_direction_t;

/* Per spatial dim, in the order of the tensor's spatial dims. */
typedef struct convjit_conv_params {
  int spatial_dims; /* 1, 2 or 3 */
  int64_t pad_begin[CONVJIT_MAX_SPATIAL_DIMS];
  int64_t pad_end[CONVJIT_MAX_SPATIAL_DIMS];
  int64_t stride[CONVJIT_MAX_SPATIAL_DIMS];
  int64_t dilation[CONVJIT_MAX_SPATIAL_DIMS];
  int64_t groups;
} convjit_conv_params_t;

typedef enum convjit_pool_mode {
  CONVJIT_POOL_MAX = 0,
  CONVJIT_POOL_AVG_EXCLUDE_PAD = 1, /* divisor counts input elements only */
  CONVJIT_POOL_AVG_INCLUDE_PAD = 2  /* divisor counts padding as well     */
} convjit_pool_mode_t;

typedef enum convjit_pool_direction {
  CONVJIT_POOL_FWD = 0,
  CONVJIT_POOL_BWD = 1
} convjit_pool_direction_t;

/* Ceil mode is not a parameter: it is expressed through y's shape, which
 * convjit_pool_output_dims computes for either rounding. */
typedef struct convjit_pool_params {
  int spatial_dims; /* 1, 2 or 3 */
  convjit_pool_mode_t mode;
  int64_t window[CONVJIT_MAX_SPATIAL_DIMS];
  int64_t pad_begin[CONVJIT_MAX_SPATIAL_DIMS];
  int64_t pad_end[CONVJIT_MAX_SPATIAL_DIMS];
  int64_t stride[CONVJIT_MAX_SPATIAL_DIMS];
  int64_t dilation[CONVJIT_MAX_SPATIAL_DIMS]; /* max pooling only; else 1 */
} convjit_pool_params_t;

/* The activation of a fused forward epilogue. */
typedef enum convjit_activation {
  CONVJIT_ACTIVATION_IDENTITY = 0,
  CONVJIT_ACTIVATION_RELU = 1,    /* max(v, 0); NaN stays NaN */
  CONVJIT_ACTIVATION_SILU = 2,    /* v * sigmoid(v) (PyTorch's SiLU, YOLO's Conv block) */
  CONVJIT_ACTIVATION_SIGMOID = 3  /* 1 / (1 + exp(-v)) */
} convjit_activation_t;

/* A convolution forward's fused epilogue (convjit_conv_forward_fused):
 *   y = act(alpha * conv(x, w) + bias [+ residual]) + beta * y
 * bias:     NULL, or K contiguous elements of y's dtype, one per filter,
 *           broadcast over the batch and the pixels (a folded batch norm's
 *           shift, say).
 * residual: NULL, or a tensor with y's descriptor (the same dims and
 *           strides), added before the activation (ResNet's shortcut).  It
 *           must not be y: to add y's previous contents, use beta. */
typedef struct convjit_epilogue {
  convjit_activation_t activation;
  const void* bias;
  const void* residual;
} convjit_epilogue_t;

/* Members of a combined convolution backward. */
typedef enum convjit_grad_mask {
  CONVJIT_GRAD_INPUT = 1,  /* dx */
  CONVJIT_GRAD_WEIGHT = 2, /* dw */
  CONVJIT_GRAD_BIAS = 4    /* db */
} convjit_grad_mask_t;

/* Batch normalisation and resize run forward or backward. */
typedef enum convjit_direction {
  CONVJIT_FORWARD = 0,
  CONVJIT_BACKWARD = 1
} convjit_direction_t;

/* BatchNorm over the batch and spatial dims of each channel (PyTorch's
 * BatchNorm1d/2d/3d, ONNX's BatchNormalization):
 *   y = act(scale * (x - mean) * invstd + shift),  invstd = 1 / sqrt(var + epsilon)
 * Statistics and parameters (scale, shift, running and saved statistics,
 * their gradients) are C contiguous elements of f32, or of f64 for f64
 * data, as cuDNN keeps them. */
typedef struct convjit_batchnorm_params {
  double epsilon;  /* >= 0; PyTorch's default 1e-5, YOLO's 1e-3; part of the op (its name) */
  /* PyTorch's: running = (1 - momentum) * running + momentum * batch, the
   * running variance unbiased (n / (n - 1)).  In [0, 1]; a run-time value. */
  double momentum;
  /* 1: ONNX's update instead, running = momentum * running +
   * (1 - momentum) * batch, with the population variance. */
  int onnx_running_stats;
  /* Applied after the shift: IDENTITY, RELU or SILU (YOLO's Conv-BN-SiLU).
   * The backward then applies its derivative, recomputing the forward. */
  convjit_activation_t activation;
} convjit_batchnorm_params_t;

/* What a batchnorm's descriptor name says beyond the params. */
typedef enum convjit_batchnorm_flag {
  CONVJIT_BATCHNORM_NO_SCALE = 1, /* scale is NULL: 1 */
  CONVJIT_BATCHNORM_NO_SHIFT = 2, /* shift is NULL: 0 */
  CONVJIT_BATCHNORM_INFERENCE = 4 /* normalise with the running statistics */
} convjit_batchnorm_flag_t;

/* How a resize maps output coordinates to input ones (ONNX's
 * coordinate_transformation_mode), per spatial dim, with scale = out / in
 * (the scale the caller gave, else the sizes' ratio):
 *   ASYMMETRIC          x = o / scale                    (PyTorch nearest)
 *   HALF_PIXEL          x = (o + 0.5) / scale - 0.5      (PyTorch nearest-exact,
 *                                                         linear align_corners=False)
 *   PYTORCH_HALF_PIXEL  HALF_PIXEL, but 0 when out is 1  (ONNX)
 *   ALIGN_CORNERS       x = o * (in - 1) / (out - 1)     (align_corners=True; with a
 *                                                         given scale, out is in * scale
 *                                                         unrounded, as in ONNX)
 *   TF_HALF_PIXEL_FOR_NN x = (o + 0.5) / scale           (ONNX, nearest only)
 * Coordinates are computed in f32 as PyTorch does (f64 for linear f64). */
typedef enum convjit_resize_coordinates {
  CONVJIT_RESIZE_ASYMMETRIC = 0,
  CONVJIT_RESIZE_HALF_PIXEL = 1,
  CONVJIT_RESIZE_PYTORCH_HALF_PIXEL = 2,
  CONVJIT_RESIZE_ALIGN_CORNERS = 3,
  CONVJIT_RESIZE_TF_HALF_PIXEL_FOR_NN = 4
} convjit_resize_coordinates_t;

/* Nearest modes round x to an input index (then clamp it into the input);
 * linear interpolates between the two neighbours of x, clamped to the edges. */
typedef enum convjit_resize_mode {
  CONVJIT_RESIZE_NEAREST = 1,                   /* floor: PyTorch's nearest */
  CONVJIT_RESIZE_NEAREST_CEIL = 2,              /* ceil */
  CONVJIT_RESIZE_NEAREST_ROUND_PREFER_FLOOR = 3, /* ONNX's default */
  CONVJIT_RESIZE_NEAREST_ROUND_PREFER_CEIL = 4,  /* with HALF_PIXEL: nearest-exact */
  CONVJIT_RESIZE_LINEAR = 5                      /* (bi/tri)linear */
} convjit_resize_mode_t;

typedef struct convjit_resize_params {
  int spatial_dims; /* 1, 2 or 3 */
  convjit_resize_mode_t mode;
  convjit_resize_coordinates_t coordinates;
  /* out / in per spatial dim as the caller gave it (PyTorch's scale_factor,
   * ONNX's scales), which maps coordinates even where the output size was
   * rounded down; 0 derives it from the sizes.  A given scale requires
   * y's size to be floor(in * scale). */
  double scale[CONVJIT_MAX_SPATIAL_DIMS];
} convjit_resize_params_t;

/* ---- library information --------------------------------------------- */

CONVJIT_API const char* convjit_version_string(void);
CONVJIT_API const char* convjit_status_string(convjit_status_t status);
/* Message of the last failed call on this thread ("" after a success). */
CONVJIT_API const char* convjit_last_error_message(void);

/* ---- settings ---------------------------------------------------------- *
 * Each setter overrides the matching environment variable (see the README's
 * table) for this process; NULL (or a negative level) restores the
 * environment's value or the default. */

/* ':'-separated directories searched for tuned libraries, in order. */
CONVJIT_API convjit_status_t convjit_set_cache_path(const char* search_path);
/* The node-local tier of the JIT cache, searched before the cache path and
 * written by every compile: an absolute path, or "none" for no local tier. */
CONVJIT_API convjit_status_t convjit_set_local_cache_path(const char* path);
/* 0 off, 1 decisions, 2 decisions and executions. */
CONVJIT_API convjit_status_t convjit_set_verbose(int level);
/* The verbose log's file and the record file (JSON lines of every op run).
 * The file must be appendable now (it is created on the first write);
 * otherwise INVALID_ARGUMENT says why and the setting is unchanged. */
CONVJIT_API convjit_status_t convjit_set_log_file(const char* path);
CONVJIT_API convjit_status_t convjit_set_record_file(const char* path);
/* "auto", "jit", "cudnn", "reference", "tuned" or "emulate". */
CONVJIT_API convjit_status_t convjit_set_policy(const char* policy);
/* "sm_90" etc.: the architecture JIT kernels are compiled for when no GPU
 * tells it (preloading on a machine without one). */
CONVJIT_API convjit_status_t convjit_set_arch(const char* arch);
/* 1 lets cuDNN run f32 convolutions on TF32 tensor cores (about 10 bits of
 * mantissa); 0, the default, keeps f32 in full precision.  Applies to
 * descriptors resolved afterwards.  -1 restores CONVJIT_ALLOW_TF32. */
CONVJIT_API convjit_status_t convjit_set_allow_tf32(int allow);
/* Rules files, a ':'-separated list applied in order (the README's
 * "Rules"): read and checked now; a bad one gives INVALID_ARGUMENT naming
 * the file, the rule and the key, and the rules in force stay.  "" sets no
 * rules; NULL restores CONVJIT_RULES.  Calls first resolved afterwards
 * follow them; a file edited later is read again only when set again. */
CONVJIT_API convjit_status_t convjit_set_rules_file(const char* paths);

/* Compiles the JIT kernel of a descriptor (its name, or lib<name>.so) for
 * `arch` ("sm_90"; NULL: the arch setting) into the first writable cache
 * directory, or finds it there already: `convjit preload` for one
 * descriptor.  *compiled (may be NULL) is 1 when it was compiled now, 0
 * when it was cached.  UNSUPPORTED for an op the JIT does not serve. */
CONVJIT_API convjit_status_t convjit_preload(const char* descriptor_name, const char* arch,
                                             int* compiled);

/* ---- collective preload ------------------------------------------------ *
 * The ranks of a job compile each JIT kernel once between them: they gather
 * the descriptors they need, split the compiles across node leaders by key,
 * pass the compiled entries around, each node leader writes its node-local
 * tier and rank 0 alone the shared one.  convjit never links MPI: the caller
 * passes its communicator as callbacks (libconvjit_mpi makes them from an
 * MPI_Comm, see convjit_mpi.h).  Each callback is collective over all `size`
 * ranks and returns 0 on success. */
typedef struct convjit_communicator {
  void* context; /* passed to every callback */
  int rank;      /* 0 .. size-1 */
  int size;
  /* Ranks with equal `node` share a node-local cache tier (libconvjit_mpi:
   * the lowest rank of MPI_Comm_split_type's shared-memory group). */
  int node;
  /* receive holds size * bytes: rank r's `bytes` bytes at offset r * bytes. */
  int (*allgather)(void* context, const void* send, void* receive, size_t bytes);
  int (*broadcast)(void* context, void* buffer, size_t bytes, int root);
  int (*barrier)(void* context);
} convjit_communicator_t;

typedef struct convjit_preload_summary {
  size_t distinct;      /* distinct descriptors over all ranks */
  size_t compiled;      /* compiled in the job (each by one rank) */
  size_t copied;        /* taken from the shared tier or another node's tier */
  size_t cached;        /* already in every tier that needed them */
  size_t unsupported;   /* not served by the JIT */
  size_t failed;        /* bad names and failed compiles */
  size_t compiled_here; /* compiled by this rank */
  size_t local_entries; /* entries this rank can load from its node-local tier */
  double seconds;
} convjit_preload_summary_t;

/* Collective over comm: every rank calls it, each with the descriptor names
 * it needs (count may be 0), the same arch ("sm_90"; NULL: the arch
 * setting) and the compile threads per node leader (jobs < 1: the cores).
 * A rank that fails makes every rank return EXECUTION_FAILED, whose message
 * names the rank and why; a descriptor that fails to compile is counted in
 * summary->failed and turns the status into EXECUTION_FAILED after the
 * others are done.  summary (may be NULL) is filled on every rank. */
CONVJIT_API convjit_status_t convjit_preload_collective(const convjit_communicator_t* comm,
                                                        const char* const* descriptor_names,
                                                        size_t count, const char* arch, int jobs,
                                                        convjit_preload_summary_t* summary);

/* Forgets failed lookups and choices made because a better backend was
 * missing, so the next call of those descriptors probes again (for example
 * after adding a tuned library to the cache).  Safe while other threads run
 * operations. */
CONVJIT_API convjit_status_t convjit_rescan(void);

/* ---- helpers to fill descriptors -------------------------------------- */

/* dims are logical (N, C, spatial...); strides are made contiguous in the
 * given layout. */
CONVJIT_API convjit_status_t convjit_tensor_desc_init(convjit_tensor_desc_t* desc,
                                                      convjit_dtype_t dtype, int rank,
                                                      const int64_t* dims, convjit_layout_t layout);
/* Stride 1, dilation 1, no padding, one group. */
CONVJIT_API convjit_status_t convjit_conv_params_init(convjit_conv_params_t* params,
                                                      int spatial_dims);
/* Window 1, stride 1, dilation 1, no padding. */
CONVJIT_API convjit_status_t convjit_pool_params_init(convjit_pool_params_t* params,
                                                      int spatial_dims, convjit_pool_mode_t mode);

/* Epsilon 1e-5, momentum 0.1, PyTorch's running statistics, no activation. */
CONVJIT_API convjit_status_t convjit_batchnorm_params_init(convjit_batchnorm_params_t* params);
/* PyTorch's defaults: ASYMMETRIC coordinates for nearest modes, HALF_PIXEL
 * for linear (align_corners=False); no scales. */
CONVJIT_API convjit_status_t convjit_resize_params_init(convjit_resize_params_t* params,
                                                        int spatial_dims,
                                                        convjit_resize_mode_t mode);

/* y_dims receives rank(x) entries: N, K, spatial... */
CONVJIT_API convjit_status_t convjit_conv_output_dims(const convjit_conv_params_t* params,
                                                      const convjit_tensor_desc_t* x_desc,
                                                      const convjit_tensor_desc_t* w_desc,
                                                      int64_t* y_dims);
CONVJIT_API convjit_status_t convjit_pool_output_dims(const convjit_pool_params_t* params,
                                                      const convjit_tensor_desc_t* x_desc,
                                                      int ceil_mode, int64_t* y_dims);

/* ---- descriptor names -------------------------------------------------- */

/* Writes the canonical descriptor name (LBANN grammar, see README) into
 * buf.  x_desc/y_desc are the tensors in the x and y slots: (x, y) for fwd,
 * (dx, dy) for bwddata, (x, dy) for bwdfilt; w_desc is w or dw.  With
 * symbolic_batch != 0 the batch entries are written as "B".
 * *required receives the size needed including the terminating NUL. */
CONVJIT_API convjit_status_t convjit_conv_descriptor_name(const convjit_conv_params_t* params,
                                                          convjit_conv_direction_t direction,
                                                          const convjit_tensor_desc_t* x_desc,
                                                          const convjit_tensor_desc_t* w_desc,
                                                          const convjit_tensor_desc_t* y_desc,
                                                          int symbolic_batch, char* buf,
                                                          size_t buf_size, size_t* required);
CONVJIT_API convjit_status_t convjit_pool_descriptor_name(const convjit_pool_params_t* params,
                                                          convjit_pool_direction_t direction,
                                                          const convjit_tensor_desc_t* x_desc,
                                                          const convjit_tensor_desc_t* y_desc,
                                                          int symbolic_batch, char* buf,
                                                          size_t buf_size, size_t* required);

/* The name of a fused forward (see convjit_conv_forward_fused): the
 * forward's name with the epilogue's extension, or exactly the forward's
 * name when the epilogue is the identity with no bias and no residual.
 * Only whether bias and residual are NULL matters here. */
CONVJIT_API convjit_status_t convjit_conv_fused_descriptor_name(
    const convjit_conv_params_t* params, const convjit_tensor_desc_t* x_desc,
    const convjit_tensor_desc_t* w_desc, const convjit_epilogue_t* epilogue,
    const convjit_tensor_desc_t* y_desc, int symbolic_batch, char* buf, size_t buf_size,
    size_t* required);

/* flags: CONVJIT_BATCHNORM_* bits.  grad_mask (backward only, else 0):
 * CONVJIT_GRAD_INPUT (dx), CONVJIT_GRAD_WEIGHT (dscale), CONVJIT_GRAD_BIAS
 * (dshift).  y_desc is y or dy. */
CONVJIT_API convjit_status_t convjit_batchnorm_descriptor_name(
    const convjit_batchnorm_params_t* params, convjit_direction_t direction, unsigned flags,
    unsigned grad_mask, const convjit_tensor_desc_t* x_desc, const convjit_tensor_desc_t* y_desc,
    int symbolic_batch, char* buf, size_t buf_size, size_t* required);
/* x_desc/y_desc: (x, y) forward, (dx, dy) backward. */
CONVJIT_API convjit_status_t convjit_resize_descriptor_name(
    const convjit_resize_params_t* params, convjit_direction_t direction,
    const convjit_tensor_desc_t* x_desc, const convjit_tensor_desc_t* y_desc, int symbolic_batch,
    char* buf, size_t buf_size, size_t* required);

/* Name of the bias-gradient op for dy (see convjit_conv_backward_bias). */
CONVJIT_API convjit_status_t convjit_bias_grad_descriptor_name(const convjit_tensor_desc_t* dy_desc,
                                                               int symbolic_batch, char* buf,
                                                               size_t buf_size, size_t* required);

/* Name of the backend that served the last successful operation on this
 * thread (e.g. "reference"). */
CONVJIT_API const char* convjit_last_backend(void);

/* ---- convolution ------------------------------------------------------- */

CONVJIT_API convjit_status_t convjit_conv_forward(
    const convjit_conv_params_t* params, const convjit_tensor_desc_t* x_desc, const void* x,
    const convjit_tensor_desc_t* w_desc, const void* w, const convjit_tensor_desc_t* y_desc,
    void* y, double alpha, double beta, const convjit_exec_t* exec);

/* y = act(alpha * conv(x, w) + bias [+ residual]) + beta * y in one pass
 * where the backend can fuse it (the JIT), else the plain forward followed
 * by one elementwise pass.  epilogue may be NULL: the plain forward. */
CONVJIT_API convjit_status_t convjit_conv_forward_fused(
    const convjit_conv_params_t* params, const convjit_tensor_desc_t* x_desc, const void* x,
    const convjit_tensor_desc_t* w_desc, const void* w, const convjit_epilogue_t* epilogue,
    const convjit_tensor_desc_t* y_desc, void* y, double alpha, double beta,
    const convjit_exec_t* exec);

CONVJIT_API convjit_status_t convjit_conv_backward_data(
    const convjit_conv_params_t* params, const convjit_tensor_desc_t* dy_desc, const void* dy,
    const convjit_tensor_desc_t* w_desc, const void* w, const convjit_tensor_desc_t* dx_desc,
    void* dx, double alpha, double beta, const convjit_exec_t* exec);

CONVJIT_API convjit_status_t convjit_conv_backward_filter(
    const convjit_conv_params_t* params, const convjit_tensor_desc_t* x_desc, const void* x,
    const convjit_tensor_desc_t* dy_desc, const void* dy, const convjit_tensor_desc_t* dw_desc,
    void* dw, double alpha, double beta, const convjit_exec_t* exec);

/* db[k] = alpha * sum over batch and spatial dims of dy[:, k, ...] + beta * db[k].
 * db holds K contiguous elements of dy's dtype. */
CONVJIT_API convjit_status_t convjit_conv_backward_bias(const convjit_tensor_desc_t* dy_desc,
                                                        const void* dy, void* db, double alpha,
                                                        double beta, const convjit_exec_t* exec);

/* PyTorch's convolution_backward: computes exactly the members of
 * (dx, dw, db) selected by grad_mask (CONVJIT_GRAD_*), overwriting them
 * (alpha 1, beta 0).  Unselected outputs are never touched and may be NULL;
 * so may x (when dw is not wanted) and w (when dx is not wanted). */
CONVJIT_API convjit_status_t convjit_conv_backward(
    const convjit_conv_params_t* params, const convjit_tensor_desc_t* x_desc, const void* x,
    const convjit_tensor_desc_t* w_desc, const void* w, const convjit_tensor_desc_t* dy_desc,
    const void* dy, unsigned grad_mask, void* dx, void* dw, void* db, const convjit_exec_t* exec);

/* ---- pooling ----------------------------------------------------------- */

CONVJIT_API convjit_status_t convjit_pool_forward(const convjit_pool_params_t* params,
                                                  const convjit_tensor_desc_t* x_desc,
                                                  const void* x,
                                                  const convjit_tensor_desc_t* y_desc, void* y,
                                                  double alpha, double beta,
                                                  const convjit_exec_t* exec);

/* dx has x_desc's shape and strides.  x is read for max pooling (the argmax
 * is recomputed, ties going to the first element in window order) and may
 * be NULL for average pooling. */
CONVJIT_API convjit_status_t convjit_pool_backward(const convjit_pool_params_t* params,
                                                   const convjit_tensor_desc_t* x_desc,
                                                   const void* x,
                                                   const convjit_tensor_desc_t* dy_desc,
                                                   const void* dy, void* dx, double alpha,
                                                   double beta, const convjit_exec_t* exec);

/* ---- batch normalisation ------------------------------------------------ *
 * y and dx have x's shape; each has its own strides (y_desc) or x's (dx).
 * alpha and beta scale y and dx (out = alpha * op + beta * out); the
 * statistics and parameter gradients are overwritten.  scale and shift may
 * be NULL (1 and 0). */

/* Normalises with the batch's statistics (the biased variance), writes them
 * to saved_mean and saved_invstd (either may be NULL), and updates
 * running_mean and running_var (both NULL: not kept).  Needs more than one
 * value per channel, as PyTorch does.  A NaN in a channel makes that
 * channel's outputs and statistics NaN, as in PyTorch. */
CONVJIT_API convjit_status_t convjit_batchnorm_forward_training(
    const convjit_batchnorm_params_t* params, const convjit_tensor_desc_t* x_desc, const void* x,
    const void* scale, const void* shift, const convjit_tensor_desc_t* y_desc, void* y,
    void* running_mean, void* running_var, void* saved_mean, void* saved_invstd, double alpha,
    double beta, const convjit_exec_t* exec);

/* Normalises with the running statistics (momentum and the running-update
 * flag are ignored). */
CONVJIT_API convjit_status_t convjit_batchnorm_forward_inference(
    const convjit_batchnorm_params_t* params, const convjit_tensor_desc_t* x_desc, const void* x,
    const void* scale, const void* shift, const void* running_mean, const void* running_var,
    const convjit_tensor_desc_t* y_desc, void* y, double alpha, double beta,
    const convjit_exec_t* exec);

/* PyTorch's native_batch_norm_backward: with training != 0, mean and
 * var_or_invstd are the saved mean and invstd the training forward wrote;
 * otherwise the running mean and variance the inference used.  Computes
 * exactly the members of (dx, dscale, dshift) grad_mask selects
 * (CONVJIT_GRAD_INPUT, _WEIGHT, _BIAS); unselected ones may be NULL.  shift
 * is read only with an activation (to recompute its input). */
CONVJIT_API convjit_status_t convjit_batchnorm_backward(
    const convjit_batchnorm_params_t* params, int training, const convjit_tensor_desc_t* x_desc,
    const void* x, const convjit_tensor_desc_t* dy_desc, const void* dy, const void* scale,
    const void* shift, const void* mean, const void* var_or_invstd, unsigned grad_mask, void* dx,
    void* dscale, void* dshift, double alpha, double beta, const convjit_exec_t* exec);

/* ---- resize ------------------------------------------------------------ */

/* y_dims receives rank(x) entries: floor(in * scale) per spatial dim; every
 * scale must be given. */
CONVJIT_API convjit_status_t convjit_resize_output_dims(const convjit_resize_params_t* params,
                                                        const convjit_tensor_desc_t* x_desc,
                                                        int64_t* y_dims);

CONVJIT_API convjit_status_t convjit_resize_forward(const convjit_resize_params_t* params,
                                                    const convjit_tensor_desc_t* x_desc,
                                                    const void* x,
                                                    const convjit_tensor_desc_t* y_desc, void* y,
                                                    double alpha, double beta,
                                                    const convjit_exec_t* exec);

/* dx = the adjoint of the forward applied to dy: each dx element sums its
 * contributions in a fixed order (no atomics), so it is deterministic. */
CONVJIT_API convjit_status_t convjit_resize_backward(const convjit_resize_params_t* params,
                                                     const convjit_tensor_desc_t* dy_desc,
                                                     const void* dy,
                                                     const convjit_tensor_desc_t* dx_desc,
                                                     void* dx, double alpha, double beta,
                                                     const convjit_exec_t* exec);

/* ---- plans ------------------------------------------------------------- *
 * A plan binds one descriptor (its name, as convjit_*_descriptor_name
 * writes it: any op) to one backend and variant chosen ahead of time: every
 * call runs exactly that kernel, with no lookup.  This
 * is what the libraries `convjit export --dace` writes call.  A plan never
 * resolves through tuned libraries, which may themselves be plans.
 *
 * backend: "jit", "cudnn", "onednn", "reference" or "emulator"; NULL or ""
 * lets the dispatch chain (tuned libraries left out) choose once per batch,
 * under the policy setting.  variant: one of the backend's variants as
 * `convjit bench` and the verbose log name them ("tc128x64", "blocked");
 * NULL or "" is the backend's own choice.
 * device: a CUDA ordinal of -1 is the calling thread's current device.
 * A symbolic-batch name (its batch written B) takes the batch per call; each
 * batch's kernel is built at its first call. */
typedef struct convjit_plan convjit_plan_t;

CONVJIT_API convjit_status_t convjit_plan_create(const char* descriptor_name,
                                                 const convjit_device_t* device,
                                                 const char* backend, const char* variant,
                                                 convjit_plan_t** plan);
/* NULL is allowed.  The plan's kernels are released; no call may be running. */
CONVJIT_API void convjit_plan_destroy(convjit_plan_t* plan);

/* The scratch bytes a call at `batch` needs (pass that much in exec, or none
 * and the kernel uses its own).  batch: the call's batch for a symbolic
 * plan; 0 or the named batch for a concrete one.  Builds the batch's kernel
 * if it was not built yet. */
CONVJIT_API convjit_status_t convjit_plan_workspace_size(convjit_plan_t* plan, int64_t batch,
                                                         size_t* bytes);

/* A convolution plan's operands in the descriptor's slots: fwd (x, w, y),
 * bwddata (dx, w, dy), bwdfilt (x, dw, dy); other ops run through
 * convjit_plan_run.  The output slot (y, dx or dw) is written as
 * out = alpha * op + beta * out; the others are read.  batch as above.
 * exec's device must be the plan's (NULL: the host); a CUDA ordinal of -1
 * stands for the plan's. */
CONVJIT_API convjit_status_t convjit_plan_execute(convjit_plan_t* plan, int64_t batch,
                                                  void* x_slot, void* w_slot, void* y_slot,
                                                  double alpha, double beta,
                                                  const convjit_exec_t* exec);

/* Any plan's operands, every op kind (convjit_plan_run).  x, w and dy are
 * read and out written as the descriptor's slots say: conv fwd (x, w -> y),
 * bwddata (w, dy -> dx), bwdfilt (x, dy -> dw); pool fwd (x -> y), bwd
 * (x (max only), dy -> dx); bias gradient (dy -> db); resize fwd (x -> y),
 * bwd (dy -> dx); batchnorm fwd (x -> y), bwd (x, dy -> dx, NULL when its
 * mask leaves dx out).  bias and residual: a fused conv fwd's epilogue.
 * norm: a batchnorm's per-channel operands, C elements each, f32 (f64 for
 * f64 data), as convjit_batchnorm_* take them: scale and shift where the
 * descriptor has them; a training fwd updates running_mean and running_var
 * (both NULL: not kept) and writes saved_mean and saved_invstd (each may be
 * NULL); inference reads the running statistics; a training bwd reads the
 * saved ones; a bwd writes scale_grad and shift_grad as its mask says.
 * momentum is the running update's. */
typedef struct convjit_norm_operands {
  const void* scale;
  const void* shift;
  void* running_mean;
  void* running_var;
  void* saved_mean;
  void* saved_invstd;
  void* scale_grad;
  void* shift_grad;
  double momentum;
} convjit_norm_operands_t;

typedef struct convjit_operands {
  const void* x;
  const void* w;
  const void* dy;
  void* out;
  const void* bias;
  const void* residual;
  convjit_norm_operands_t norm;
} convjit_operands_t;

/* Every pointer NULL; momentum 0.1 (PyTorch's). */
CONVJIT_API convjit_status_t convjit_operands_init(convjit_operands_t* operands);

/* Runs any plan's op at `batch` (as convjit_plan_execute) on `operands`:
 * out = alpha * op + beta * out.  An operand the op needs that is NULL is an
 * error naming it. */
CONVJIT_API convjit_status_t convjit_plan_run(convjit_plan_t* plan, int64_t batch,
                                              const convjit_operands_t* operands, double alpha,
                                              double beta, const convjit_exec_t* exec);

/* Writes what serves the plan at `batch` into buf: the backend, then the
 * variant in brackets where the backend names one ("onednn[blocked]").
 * *required receives the size needed including the terminating NUL. */
CONVJIT_API convjit_status_t convjit_plan_backend(convjit_plan_t* plan, int64_t batch, char* buf,
                                                  size_t buf_size, size_t* required);

#ifdef __cplusplus
}
#endif

#endif /* CONVJIT_CONVJIT_H */
