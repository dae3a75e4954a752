#ifndef TCOMPILE_H
#define TCOMPILE_H

#define TC_VERSION_MAJOR 0
#define TC_VERSION_MINOR 1
#define TC_VERSION_PATCH 0
#define TC_VERSION_STRING "0.1.0"

#include <stddef.h>
#include <stdint.h>

#ifdef TCOMPILE_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define TCDEF static __attribute__((unused))
#else
#define TCDEF static
#endif
#else
#define TCDEF extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------ */
/* Results, dtypes, limits                                                   */
/* ------------------------------------------------------------------------ */

typedef enum tc_result {
    TC_OK = 0,
    TC_ERR_INVALID_ARG,   /* a bad value: negative size, bad option, ...     */
    TC_ERR_NULL,          /* a NULL tensor or pointer where one is required  */
    TC_ERR_SHAPE,         /* shapes that do not fit together                 */
    TC_ERR_DTYPE,         /* a dtype the op does not accept                  */
    TC_ERR_AXIS,          /* an axis / dim out of range or repeated          */
    TC_ERR_INDEX,         /* an index value out of range                     */
    TC_ERR_OVERFLOW,      /* sizes whose product or byte count overflows     */
    TC_ERR_OOM,           /* an allocation failed                            */
    TC_ERR_UNSUPPORTED,   /* valid but not implemented                       */
    TC_ERR_STATE,         /* API misuse: unbalanced scopes, ...              */
    TC_ERR_IO,            /* file or system error                            */
    TC_ERR_DEVICE,        /* the GPU, its driver or NVRTC failed or is absent */
    TC_RESULT_COUNT_
} tc_result;

TCDEF const char *tc_result_string(tc_result r);

/* 0 is the default dtype (f32).  Sizes: 4, 2, 2, 4, 1 bytes. */
typedef enum tc_dtype {
    TC_F32 = 0,
    TC_F16,
    TC_BF16,
    TC_I32,
    TC_BOOL,
    TC_DTYPE_COUNT_
} tc_dtype;

TCDEF const char *tc_dtype_name(tc_dtype dt);
TCDEF size_t tc_dtype_size(tc_dtype dt);   /* 0 for an invalid dtype */

#define TC_MAX_DIMS 8

typedef struct tc_ctx tc_ctx;
typedef struct tc_tensor tc_tensor;

/* ------------------------------------------------------------------------ */
/* Context                                                                   */
/* ------------------------------------------------------------------------ */

typedef enum tc_log_level {
    TC_LOG_DEFAULT = 0,   /* = TC_LOG_WARN */
    TC_LOG_ERROR,
    TC_LOG_WARN,
    TC_LOG_INFO,
    TC_LOG_DEBUG
} tc_log_level;

typedef void (*tc_log_fn)(void *user, tc_log_level level, const char *msg);

/* SIMD levels of the built-in executor (fused kernels), chosen at run time
 * from cpuid + XGETBV: the widest the CPU and OS support.  A lower one can
 * be forced (tests, debugging).  NONE: no executor in this build (compilers
 * without GNU C vector extensions): compiled graphs run op by op.
 * Build flag TC_ISA_MAX (where TCOMPILE_IMPLEMENTATION is defined), e.g.
 * -DTC_ISA_MAX=TC_ISA_AVX2: the widest level compiled; the wider ones are
 * left out (a shorter build: each x86 level is about a fifth of it) and a
 * request for one runs at TC_ISA_MAX.  The levels below the widest built
 * (on x86-64: SSE2 next to AVX2, scalar everywhere) run only when forced
 * or on a CPU without the wider ones, and are compiled in a compact form
 * (same results); -DTC_ISA_MAX=TC_ISA_V128 gives SSE2-only x86 CPUs the
 * full one. */
typedef enum tc_isa {
    TC_ISA_AUTO = 0,
    TC_ISA_SCALAR,          /* one lane                                      */
    TC_ISA_V128,            /* SSE2 on x86-64, NEON on AArch64, 4 lanes      */
    TC_ISA_AVX2,            /* AVX2 + FMA, 8 lanes                           */
    TC_ISA_AVX512,          /* AVX-512F, 16 lanes, masked tails              */
    TC_ISA_NONE = -1
} tc_isa;

/* Zero-initialise, then set what you need. */
typedef struct tc_ctx_options {
    int num_threads;        /* 0 = one per online CPU; 1 = no worker threads */
    tc_log_fn log;          /* NULL = write to stderr                        */
    void *log_user;
    tc_log_level log_level; /* messages above this level are dropped         */
    int log_op_errors;      /* nonzero: log every op error when it happens   */
    tc_isa max_isa;         /* AUTO = the best the CPU runs; else a cap      */
    int64_t cache_bytes;    /* freed tensor blocks (and default-mode call
                               arenas) kept for reuse, at most
                               this many bytes: 0 = 256 MiB, < 0 = none     */
    int allow_tf32;         /* nonzero: f32 matmuls and linears on a CUDA
                               device of compute capability 8.0+ may use
                               TF32 tensor cores (inputs rounded to 10
                               mantissa bits, f32 accumulation), like
                               torch.backends.cuda.matmul.allow_tf32;
                               0 = off: f32 stays f32                       */
} tc_ctx_options;

TCDEF tc_ctx *tc_ctx_create(const tc_ctx_options *opts); /* NULL on OOM */
TCDEF void tc_ctx_destroy(tc_ctx *ctx);                  /* frees all     */
TCDEF int tc_ctx_num_threads(const tc_ctx *ctx);
TCDEF tc_result tc_ctx_set_num_threads(tc_ctx *ctx, int num_threads);
/* The executor's SIMD level: what runs now, and a cap on it (AUTO = best;
 * a level the CPU lacks, or above the build's TC_ISA_MAX, is clamped down).
 * The environment variable TC_ISA (scalar, v128 or sse2 or neon, avx2,
 * avx512) caps it at context creation, for debugging. */
TCDEF tc_isa tc_ctx_isa(const tc_ctx *ctx);
TCDEF tc_result tc_ctx_set_isa(tc_ctx *ctx, tc_isa max_isa);
/* tc_ctx_options.allow_tf32, changed: read when a function's program for a
 * signature is built (its first run) and by eager ops compiled after it. */
TCDEF tc_result tc_ctx_set_allow_tf32(tc_ctx *ctx, int allow);
TCDEF const char *tc_isa_name(tc_isa isa);
/* The first error any op on this context produced since the last clear. */
TCDEF tc_result tc_ctx_status(const tc_ctx *ctx);
TCDEF const char *tc_ctx_error(const tc_ctx *ctx);       /* "" when none  */
TCDEF void tc_ctx_clear_error(tc_ctx *ctx);
/* Live tensor objects and storage bytes owned by the context. */
TCDEF int64_t tc_ctx_live_tensors(const tc_ctx *ctx);
TCDEF int64_t tc_ctx_live_bytes(const tc_ctx *ctx);
/* Bytes of freed tensor blocks the context keeps for the next tensors (a
 * large block malloc'd afresh is often new pages to fault in, which cost
 * more than the op itself); tc_ctx_empty_cache returns them to the system
 * (so does an allocation that would fail otherwise, and tc_ctx_destroy). */
TCDEF int64_t tc_ctx_cached_bytes(const tc_ctx *ctx);
TCDEF void tc_ctx_empty_cache(tc_ctx *ctx);

/* ------------------------------------------------------------------------ */
/* Scopes (see MEMORY MODEL above)                                           */
/* ------------------------------------------------------------------------ */

TCDEF void tc_scope_begin(tc_ctx *ctx);
/* Frees every tensor the innermost scope owns.  TC_ERR_STATE when no scope
 * of the caller's is open (nothing is freed then): none at all, or, inside
 * a compiled function, none the function opened itself (the scope around
 * it is tcompile's own and ends with the call). */
TCDEF tc_result tc_scope_end(tc_ctx *ctx);
TCDEF int tc_scope_depth(const tc_ctx *ctx);     /* 0 = root */
TCDEF tc_tensor *tc_keep(tc_tensor *t);          /* one scope out; returns t */
TCDEF tc_tensor *tc_persist(tc_tensor *t);       /* to the root; returns t   */
TCDEF void tc_free(tc_tensor *t);                /* NULL and sentinels: no-op */

/* ------------------------------------------------------------------------ */
/* Tensor properties and host access                                         */
/* ------------------------------------------------------------------------ */

TCDEF tc_result tc_status(const tc_tensor *t);   /* NULL -> TC_ERR_NULL */
TCDEF const char *tc_error(const tc_tensor *t);  /* "" when OK */
TCDEF tc_ctx *tc_context(const tc_tensor *t);
TCDEF tc_dtype tc_type(const tc_tensor *t);
TCDEF int tc_ndim(const tc_tensor *t);
/* dim may be negative (from the end); 0 when out of range */
TCDEF int64_t tc_dim(const tc_tensor *t, int dim);
TCDEF const int64_t *tc_shape(const tc_tensor *t);     /* ndim entries */
TCDEF const int64_t *tc_strides(const tc_tensor *t);   /* in elements  */
TCDEF int64_t tc_offset(const tc_tensor *t);           /* in elements  */
TCDEF int64_t tc_numel(const tc_tensor *t);
TCDEF int tc_is_contiguous(const tc_tensor *t);
/* Pointer to element [0,0,...] (storage + offset); index with tc_strides.
 * NULL for errored tensors.  Writing through it changes every view. */
TCDEF void *tc_data_at(const tc_tensor *t, const char *file, int line);
#define tc_data(t) tc_data_at(t, __FILE__, __LINE__)
/* Host reads (tc_data, tc_read, tc_get, tc_item) inside a compiled function
 * are graph breaks (see tc_compile).
 * Copy the tensor (any strides) into a contiguous row-major buffer, converting
 * to `dtype`; dst_bytes must be at least numel * tc_dtype_size(dtype). */
TCDEF tc_result tc_read_at(const tc_tensor *t, tc_dtype dtype, void *dst, size_t dst_bytes, const char *file, int line);
#define tc_read(t, dtype, dst, bytes) tc_read_at(t, dtype, dst, bytes, __FILE__, __LINE__)
/* Copy a contiguous row-major buffer of `dtype` into t (any strides). */
TCDEF tc_result tc_write(tc_tensor *t, tc_dtype dtype, const void *src, size_t src_bytes);
/* Value of a one-element tensor as double; NaN when errored or numel != 1. */
TCDEF double tc_item_at(const tc_tensor *t, const char *file, int line);
#define tc_item(t) tc_item_at(t, __FILE__, __LINE__)
/* Element access by index (ndim entries, negatives not allowed). */
TCDEF double tc_get(const tc_tensor *t, const int64_t *index);
TCDEF tc_result tc_set(tc_tensor *t, const int64_t *index, double value);
/* Shape as text, e.g. "f32[2,3]"; writes at most cap bytes, returns buf. */
TCDEF char *tc_describe(const tc_tensor *t, char *buf, size_t cap);

/* ------------------------------------------------------------------------ */
/* Devices.  A tensor lives on the host (TC_CPU) or on the GPU (TC_CUDA).    */
/* The CUDA driver and NVRTC are loaded at run time (no CUDA SDK is needed   */
/* to build): libcuda.so.1 / nvcuda.dll and libnvrtc.so.13/.12/.11.2 /       */
/* nvrtc64_*.dll, or the paths in the environment variables TC_CUDA_LIB and  */
/* TC_NVRTC_LIB.  TC_NO_CUDA (implementation unit) compiles the backend out.  */
/* ------------------------------------------------------------------------ */

typedef enum tc_device { TC_CPU = 0, TC_CUDA = 1 } tc_device;

TCDEF tc_device tc_device_of(const tc_tensor *t);   /* TC_CPU for NULL */
/* A copy of x on `device` in the current scope (x itself when it is there
 * already).  tc_read, tc_write, tc_get and tc_item work on device tensors
 * (they copy); tc_data of one is NULL.  An op's inputs must all be on one
 * device (else TC_ERR_INVALID_ARG naming the op and the devices). */
TCDEF tc_tensor *tc_to_at(tc_ctx *ctx, tc_tensor *x, tc_device device, const char *file, int line);
#define tc_to(ctx, x, device) tc_to_at(ctx, x, device, __FILE__, __LINE__)
/* 1 when a GPU, its driver and NVRTC were found and work; else 0 and, when
 * why is not NULL, *why the reason (a static string).  Loading happens
 * once per process, on the first use of the device. */
TCDEF int tc_cuda_available(const char **why);
typedef struct tc_cuda_info {
    char name[96];
    int sm;                  /* compute capability, e.g. 90              */
    int multiprocessors;
    int driver_version;      /* e.g. 12080                               */
    int nvrtc_version;       /* e.g. 12080                               */
    int nvrtc_max_sm;        /* newest architecture NVRTC emits code for */
    char driver_path[128], nvrtc_path[160];
} tc_cuda_info;
TCDEF tc_result tc_cuda_device_info(tc_cuda_info *info); /* TC_ERR_DEVICE when unavailable */
/* Device bytes the context keeps cached for reuse, and the cuMemAlloc
 * calls it has made (after warm-up, calls make none). */
/* Waits for the context's queued GPU work (calls return once their kernels
 * are queued; a host read waits by itself): for timing. */
TCDEF tc_result tc_cuda_synchronize(tc_ctx *ctx);
TCDEF int64_t tc_cuda_cached_bytes(const tc_ctx *ctx);
TCDEF int64_t tc_cuda_alloc_count(const tc_ctx *ctx);

/* ------------------------------------------------------------------------ */
/* Ops.  Every op is a macro over a function with an `_at` suffix that takes  */
/* the caller's file and line last.  Shapes: (ndim, const int64_t *shape).   */
/* ------------------------------------------------------------------------ */

#define TC_AT_ const char *file, int line
#define TC_HERE_ __FILE__, __LINE__

/* Creation.  All are new storage except tc_wrap. */
TCDEF tc_tensor *tc_empty_at(tc_ctx *ctx, tc_dtype dt, int ndim, const int64_t *shape, TC_AT_);
TCDEF tc_tensor *tc_zeros_at(tc_ctx *ctx, tc_dtype dt, int ndim, const int64_t *shape, TC_AT_);
TCDEF tc_tensor *tc_ones_at(tc_ctx *ctx, tc_dtype dt, int ndim, const int64_t *shape, TC_AT_);
TCDEF tc_tensor *tc_full_at(tc_ctx *ctx, tc_dtype dt, int ndim, const int64_t *shape, double value, TC_AT_);
/* 0-d tensor holding value (f32). */
TCDEF tc_tensor *tc_scalar_at(tc_ctx *ctx, double value, TC_AT_);
/* [start, end) by step, like torch.arange; dtype TC_I32 or a float type. */
TCDEF tc_tensor *tc_arange_at(tc_ctx *ctx, tc_dtype dt, double start, double end, double step, TC_AT_);
/* Deterministic: element i depends only on (seed, i), whatever the threads. */
TCDEF tc_tensor *tc_rand_uniform_at(tc_ctx *ctx, int ndim, const int64_t *shape, double lo, double hi, uint64_t seed, TC_AT_);
TCDEF tc_tensor *tc_rand_normal_at(tc_ctx *ctx, int ndim, const int64_t *shape, double mean, double std, uint64_t seed, TC_AT_);
/* Copy from contiguous row-major user memory. */
TCDEF tc_tensor *tc_from_data_at(tc_ctx *ctx, tc_dtype dt, int ndim, const int64_t *shape, const void *data, TC_AT_);
/* View user memory without copying.  strides in elements, NULL = row-major.
 * The memory must stay valid while any tensor views it; never freed here. */
TCDEF tc_tensor *tc_wrap_at(tc_ctx *ctx, tc_dtype dt, int ndim, const int64_t *shape, const int64_t *strides, void *data, TC_AT_);

#define tc_empty(ctx, dt, ndim, shape) tc_empty_at(ctx, dt, ndim, shape, TC_HERE_)
#define tc_zeros(ctx, dt, ndim, shape) tc_zeros_at(ctx, dt, ndim, shape, TC_HERE_)
#define tc_ones(ctx, dt, ndim, shape) tc_ones_at(ctx, dt, ndim, shape, TC_HERE_)
#define tc_full(ctx, dt, ndim, shape, v) tc_full_at(ctx, dt, ndim, shape, v, TC_HERE_)
#define tc_scalar(ctx, v) tc_scalar_at(ctx, v, TC_HERE_)
#define tc_arange(ctx, dt, start, end, step) tc_arange_at(ctx, dt, start, end, step, TC_HERE_)
#define tc_rand_uniform(ctx, ndim, shape, lo, hi, seed) tc_rand_uniform_at(ctx, ndim, shape, lo, hi, seed, TC_HERE_)
#define tc_rand_normal(ctx, ndim, shape, mean, std, seed) tc_rand_normal_at(ctx, ndim, shape, mean, std, seed, TC_HERE_)
#define tc_from_data(ctx, dt, ndim, shape, data) tc_from_data_at(ctx, dt, ndim, shape, data, TC_HERE_)
#define tc_wrap(ctx, dt, ndim, shape, strides, data) tc_wrap_at(ctx, dt, ndim, shape, strides, data, TC_HERE_)

/* safetensors checkpoints (Hugging Face's format).  tc_safetensors_open
 * maps the file copy-on-write (reads it where mapping fails) and checks the
 * whole header strictly: a malformed or hostile file gives NULL and a
 * message in err (may be NULL), never a crash or a read outside the file.
 * tc_safetensors_get returns a tensor in the current scope: a view of the
 * file's memory (zero copy) when its bits are tcompile's dtype and aligned
 * (F32, F16, BF16, I32, BOOL), else a converted copy: F64 -> f32; I64, I32,
 * I16, I8, U64, U32, U16, U8 -> i32 (a value outside i32 is an error,
 * TC_ERR_OVERFLOW).  A view is valid until tc_safetensors_close; writes
 * into it change this process's copy only.  A missing name is an errored
 * tensor (TC_ERR_INDEX) whose message names the file.  A mapped file that
 * is truncated (or rewritten shorter) while open raises SIGBUS at the next
 * read of a view past its new end: tc_safetensors_open_with with
 * options.copy = 1 reads the file into memory instead, and its views are
 * of that copy. */
typedef struct tc_safetensors tc_safetensors;
typedef struct tc_safetensors_info {
    const char *name;          /* valid until close                         */
    const char *dtype;         /* as in the file: "F32", "BF16", "I64", ...  */
    int ndim;
    int64_t shape[TC_MAX_DIMS];
    uint64_t nbytes;           /* in the file                               */
    tc_dtype loads_as;         /* what tc_safetensors_get returns           */
    int zero_copy;             /* 1: get views the file's memory            */
    int supported;             /* 0: a dtype get refuses (F8_E4M3, F8_E5M2) */
} tc_safetensors_info;
typedef struct tc_safetensors_options {
    int copy;                  /* 1: read into memory, not mapped (0: mapped) */
} tc_safetensors_options;
TCDEF tc_safetensors *tc_safetensors_open(tc_ctx *ctx, const char *path, char *err, size_t errcap);
/* opts NULL or zeroed: as tc_safetensors_open */
TCDEF tc_safetensors *tc_safetensors_open_with(tc_ctx *ctx, const char *path, const tc_safetensors_options *opts,
                                               char *err, size_t errcap);
TCDEF void tc_safetensors_close(tc_safetensors *st); /* NULL: no-op */
TCDEF int tc_safetensors_count(const tc_safetensors *st);             /* tensors, in file order */
TCDEF int tc_safetensors_find(const tc_safetensors *st, const char *name); /* index or -1 */
TCDEF tc_result tc_safetensors_info_of(const tc_safetensors *st, int index, tc_safetensors_info *info);
TCDEF const char *tc_safetensors_metadata(const tc_safetensors *st, const char *key); /* NULL: absent */
TCDEF tc_tensor *tc_safetensors_get_at(tc_safetensors *st, const char *name, TC_AT_);
#define tc_safetensors_get(st, name) tc_safetensors_get_at(st, name, TC_HERE_)
/* Writes n tensors (F32, F16, BF16, I32, BOOL; any strides) under names, with
 * optional string metadata as a NULL-terminated list of key, value.  On
 * failure (TC_ERR_OOM, TC_ERR_IO, ...) err says why, and a file it had
 * begun to write is removed. */
TCDEF tc_result tc_safetensors_save(const char *path, int n, const char *const *names, tc_tensor *const *tensors,
                                    const char *const *metadata, char *err, size_t errcap);

/* Views: no copy, share storage.  tc_reshape copies only when the strides
 * cannot express the new shape (like torch.reshape); one entry may be -1. */
TCDEF tc_tensor *tc_reshape_at(tc_ctx *ctx, tc_tensor *x, int ndim, const int64_t *shape, TC_AT_);
TCDEF tc_tensor *tc_permute_at(tc_ctx *ctx, tc_tensor *x, const int *perm, TC_AT_); /* tc_ndim(x) entries */
TCDEF tc_tensor *tc_transpose_at(tc_ctx *ctx, tc_tensor *x, int dim0, int dim1, TC_AT_);
/* x[start:end:step] along dim, Python rules (negatives count from the end,
 * out-of-range bounds clamp); step >= 1. */
TCDEF tc_tensor *tc_slice_at(tc_ctx *ctx, tc_tensor *x, int dim, int64_t start, int64_t end, int64_t step, TC_AT_);
/* x[..., index, ...]: removes dim. */
TCDEF tc_tensor *tc_select_at(tc_ctx *ctx, tc_tensor *x, int dim, int64_t index, TC_AT_);
/* Broadcast to shape (-1 keeps a size); new dims on the left. */
TCDEF tc_tensor *tc_expand_at(tc_ctx *ctx, tc_tensor *x, int ndim, const int64_t *shape, TC_AT_);
TCDEF tc_tensor *tc_squeeze_at(tc_ctx *ctx, tc_tensor *x, int dim, TC_AT_);   /* no-op if size != 1 */
TCDEF tc_tensor *tc_squeeze_all_at(tc_ctx *ctx, tc_tensor *x, TC_AT_);
TCDEF tc_tensor *tc_unsqueeze_at(tc_ctx *ctx, tc_tensor *x, int dim, TC_AT_);
TCDEF tc_tensor *tc_flatten_at(tc_ctx *ctx, tc_tensor *x, int start_dim, int end_dim, TC_AT_);
/* Returns x itself (same object) when already contiguous, else a copy. */
TCDEF tc_tensor *tc_contiguous_at(tc_ctx *ctx, tc_tensor *x, TC_AT_);
TCDEF tc_tensor *tc_clone_at(tc_ctx *ctx, tc_tensor *x, TC_AT_);              /* always a copy */
/* dst[...] = src (broadcast to dst, converted to dst's dtype); returns dst. */
TCDEF tc_tensor *tc_copy_at(tc_ctx *ctx, tc_tensor *dst, tc_tensor *src, TC_AT_);

#define tc_reshape(ctx, x, ndim, shape) tc_reshape_at(ctx, x, ndim, shape, TC_HERE_)
#define tc_permute(ctx, x, perm) tc_permute_at(ctx, x, perm, TC_HERE_)
#define tc_transpose(ctx, x, d0, d1) tc_transpose_at(ctx, x, d0, d1, TC_HERE_)
#define tc_slice(ctx, x, dim, start, end, step) tc_slice_at(ctx, x, dim, start, end, step, TC_HERE_)
#define tc_select(ctx, x, dim, index) tc_select_at(ctx, x, dim, index, TC_HERE_)
#define tc_expand(ctx, x, ndim, shape) tc_expand_at(ctx, x, ndim, shape, TC_HERE_)
#define tc_squeeze(ctx, x, dim) tc_squeeze_at(ctx, x, dim, TC_HERE_)
#define tc_squeeze_all(ctx, x) tc_squeeze_all_at(ctx, x, TC_HERE_)
#define tc_unsqueeze(ctx, x, dim) tc_unsqueeze_at(ctx, x, dim, TC_HERE_)
#define tc_flatten(ctx, x, s, e) tc_flatten_at(ctx, x, s, e, TC_HERE_)
#define tc_contiguous(ctx, x) tc_contiguous_at(ctx, x, TC_HERE_)
#define tc_clone(ctx, x) tc_clone_at(ctx, x, TC_HERE_)
#define tc_copy(ctx, dst, src) tc_copy_at(ctx, dst, src, TC_HERE_)

/* Pointwise unary.  Float results for float ops (i32/bool inputs give f32);
 * neg/abs/square/relu/floor/ceil keep i32.  gelu is the erf form,
 * gelu_tanh PyTorch's approximate='tanh'.  Each is declared from the list
 * below; the implementation's rows are in src/ops/optable.h.  (A new op:
 * its macro here, its name at the end of the list, its row there.) */
#define tc_neg(ctx, x) tc_neg_at(ctx, x, TC_HERE_)
#define tc_abs(ctx, x) tc_abs_at(ctx, x, TC_HERE_)
#define tc_exp(ctx, x) tc_exp_at(ctx, x, TC_HERE_)
#define tc_log(ctx, x) tc_log_at(ctx, x, TC_HERE_)
#define tc_sqrt(ctx, x) tc_sqrt_at(ctx, x, TC_HERE_)
#define tc_rsqrt(ctx, x) tc_rsqrt_at(ctx, x, TC_HERE_)
#define tc_reciprocal(ctx, x) tc_reciprocal_at(ctx, x, TC_HERE_)
#define tc_square(ctx, x) tc_square_at(ctx, x, TC_HERE_)
#define tc_sin(ctx, x) tc_sin_at(ctx, x, TC_HERE_)
#define tc_cos(ctx, x) tc_cos_at(ctx, x, TC_HERE_)
#define tc_tanh(ctx, x) tc_tanh_at(ctx, x, TC_HERE_)
#define tc_sigmoid(ctx, x) tc_sigmoid_at(ctx, x, TC_HERE_)
#define tc_relu(ctx, x) tc_relu_at(ctx, x, TC_HERE_)
#define tc_gelu(ctx, x) tc_gelu_at(ctx, x, TC_HERE_)
#define tc_gelu_tanh(ctx, x) tc_gelu_tanh_at(ctx, x, TC_HERE_)
#define tc_silu(ctx, x) tc_silu_at(ctx, x, TC_HERE_)
#define tc_floor(ctx, x) tc_floor_at(ctx, x, TC_HERE_)
#define tc_ceil(ctx, x) tc_ceil_at(ctx, x, TC_HERE_)
#define tc_erf(ctx, x) tc_erf_at(ctx, x, TC_HERE_)
#define tc_hardswish(ctx, x) tc_hardswish_at(ctx, x, TC_HERE_) /* x * relu6(x + 3) / 6 */
#define TC__UNARY_API(X)                                                  \
    X(neg) X(abs) X(exp) X(log) X(sqrt) X(rsqrt) X(reciprocal) X(square) \
    X(sin) X(cos) X(tanh) X(sigmoid) X(relu) X(gelu) X(gelu_tanh) X(silu) \
    X(floor) X(ceil) X(erf) X(hardswish)
#define TC__DECL_UNARY_(name) TCDEF tc_tensor *tc_##name##_at(tc_ctx *ctx, tc_tensor *x, TC_AT_);
TC__UNARY_API(TC__DECL_UNARY_)
#undef TC__DECL_UNARY_

/* softplus(x) = log1p(exp(beta*x))/beta, linear where beta*x > threshold
 * (PyTorch defaults: beta 1, threshold 20). */
TCDEF tc_tensor *tc_softplus_at(tc_ctx *ctx, tc_tensor *x, double beta, double threshold, TC_AT_);
/* min(max(x, lo), hi); pass -INFINITY / INFINITY for no bound. */
TCDEF tc_tensor *tc_clamp_at(tc_ctx *ctx, tc_tensor *x, double lo, double hi, TC_AT_);
/* Float -> i32 truncates toward zero (NaN -> 0, out of range saturates);
 * anything -> bool is x != 0. */
TCDEF tc_tensor *tc_cast_at(tc_ctx *ctx, tc_tensor *x, tc_dtype dt, TC_AT_);
#define tc_softplus(ctx, x, beta, thr) tc_softplus_at(ctx, x, beta, thr, TC_HERE_)
#define tc_clamp(ctx, x, lo, hi) tc_clamp_at(ctx, x, lo, hi, TC_HERE_)
#define tc_cast(ctx, x, dt) tc_cast_at(ctx, x, dt, TC_HERE_)

/* Binary, broadcasting like PyTorch.  div is true division (float result).
 * Comparisons give bool.  The _scalar forms take b as a double.  Declared
 * from the list; the rows are in src/ops/optable.h. */
#define TC__BINARY_API(X) \
    X(add) X(sub) X(mul) X(div) X(pow) X(maximum) X(minimum) \
    X(eq) X(ne) X(lt) X(le) X(gt) X(ge)
#define TC__DECL_BINARY_(name) \
    TCDEF tc_tensor *tc_##name##_at(tc_ctx *ctx, tc_tensor *a, tc_tensor *b, TC_AT_); \
    TCDEF tc_tensor *tc_##name##_scalar_at(tc_ctx *ctx, tc_tensor *a, double b, TC_AT_);
TC__BINARY_API(TC__DECL_BINARY_)
#undef TC__DECL_BINARY_
#define tc_add(ctx, a, b) tc_add_at(ctx, a, b, TC_HERE_)
#define tc_sub(ctx, a, b) tc_sub_at(ctx, a, b, TC_HERE_)
#define tc_mul(ctx, a, b) tc_mul_at(ctx, a, b, TC_HERE_)
#define tc_div(ctx, a, b) tc_div_at(ctx, a, b, TC_HERE_)
#define tc_pow(ctx, a, b) tc_pow_at(ctx, a, b, TC_HERE_)
#define tc_maximum(ctx, a, b) tc_maximum_at(ctx, a, b, TC_HERE_)
#define tc_minimum(ctx, a, b) tc_minimum_at(ctx, a, b, TC_HERE_)
#define tc_eq(ctx, a, b) tc_eq_at(ctx, a, b, TC_HERE_)
#define tc_ne(ctx, a, b) tc_ne_at(ctx, a, b, TC_HERE_)
#define tc_lt(ctx, a, b) tc_lt_at(ctx, a, b, TC_HERE_)
#define tc_le(ctx, a, b) tc_le_at(ctx, a, b, TC_HERE_)
#define tc_gt(ctx, a, b) tc_gt_at(ctx, a, b, TC_HERE_)
#define tc_ge(ctx, a, b) tc_ge_at(ctx, a, b, TC_HERE_)
#define tc_add_scalar(ctx, a, s) tc_add_scalar_at(ctx, a, s, TC_HERE_)
#define tc_sub_scalar(ctx, a, s) tc_sub_scalar_at(ctx, a, s, TC_HERE_)
#define tc_mul_scalar(ctx, a, s) tc_mul_scalar_at(ctx, a, s, TC_HERE_)
#define tc_div_scalar(ctx, a, s) tc_div_scalar_at(ctx, a, s, TC_HERE_)
#define tc_pow_scalar(ctx, a, s) tc_pow_scalar_at(ctx, a, s, TC_HERE_)
#define tc_maximum_scalar(ctx, a, s) tc_maximum_scalar_at(ctx, a, s, TC_HERE_)
#define tc_minimum_scalar(ctx, a, s) tc_minimum_scalar_at(ctx, a, s, TC_HERE_)
#define tc_eq_scalar(ctx, a, s) tc_eq_scalar_at(ctx, a, s, TC_HERE_)
#define tc_ne_scalar(ctx, a, s) tc_ne_scalar_at(ctx, a, s, TC_HERE_)
#define tc_lt_scalar(ctx, a, s) tc_lt_scalar_at(ctx, a, s, TC_HERE_)
#define tc_le_scalar(ctx, a, s) tc_le_scalar_at(ctx, a, s, TC_HERE_)
#define tc_gt_scalar(ctx, a, s) tc_gt_scalar_at(ctx, a, s, TC_HERE_)
#define tc_ge_scalar(ctx, a, s) tc_ge_scalar_at(ctx, a, s, TC_HERE_)

/* cond ? a : b, all three broadcast; cond must be bool. */
TCDEF tc_tensor *tc_where_at(tc_ctx *ctx, tc_tensor *cond, tc_tensor *a, tc_tensor *b, TC_AT_);
#define tc_where(ctx, c, a, b) tc_where_at(ctx, c, a, b, TC_HERE_)

/* Reductions over a set of axes (naxes = 0 or axes = NULL: all axes).
 * sum of i32/bool gives i32; mean/var give float; max/min keep the dtype and
 * reject empty reductions; argmax gives i32 (see DTYPES AND SEMANTICS). */
TCDEF tc_tensor *tc_sum_at(tc_ctx *ctx, tc_tensor *x, int naxes, const int *axes, int keepdim, TC_AT_);
TCDEF tc_tensor *tc_mean_at(tc_ctx *ctx, tc_tensor *x, int naxes, const int *axes, int keepdim, TC_AT_);
TCDEF tc_tensor *tc_max_at(tc_ctx *ctx, tc_tensor *x, int naxes, const int *axes, int keepdim, TC_AT_);
TCDEF tc_tensor *tc_min_at(tc_ctx *ctx, tc_tensor *x, int naxes, const int *axes, int keepdim, TC_AT_);
TCDEF tc_tensor *tc_argmax_at(tc_ctx *ctx, tc_tensor *x, int naxes, const int *axes, int keepdim, TC_AT_);
/* correction: 1 = unbiased (PyTorch's default), 0 = population. */
TCDEF tc_tensor *tc_var_at(tc_ctx *ctx, tc_tensor *x, int naxes, const int *axes, int correction, int keepdim, TC_AT_);
#define tc_sum(ctx, x, n, axes, keep) tc_sum_at(ctx, x, n, axes, keep, TC_HERE_)
#define tc_mean(ctx, x, n, axes, keep) tc_mean_at(ctx, x, n, axes, keep, TC_HERE_)
#define tc_max(ctx, x, n, axes, keep) tc_max_at(ctx, x, n, axes, keep, TC_HERE_)
#define tc_min(ctx, x, n, axes, keep) tc_min_at(ctx, x, n, axes, keep, TC_HERE_)
#define tc_argmax(ctx, x, n, axes, keep) tc_argmax_at(ctx, x, n, axes, keep, TC_HERE_)
#define tc_var(ctx, x, n, axes, corr, keep) tc_var_at(ctx, x, n, axes, corr, keep, TC_HERE_)

/* Row ops along one dim / the last `nnorm` dims.  weight/bias may be NULL;
 * their shape is the normalised shape.  PyTorch's eps: layer_norm 1e-5;
 * rms_norm defaults to FLT_EPSILON (pass it). */
TCDEF tc_tensor *tc_softmax_at(tc_ctx *ctx, tc_tensor *x, int dim, TC_AT_);
TCDEF tc_tensor *tc_log_softmax_at(tc_ctx *ctx, tc_tensor *x, int dim, TC_AT_);
TCDEF tc_tensor *tc_layer_norm_at(tc_ctx *ctx, tc_tensor *x, int nnorm, tc_tensor *weight, tc_tensor *bias, double eps, TC_AT_);
TCDEF tc_tensor *tc_rms_norm_at(tc_ctx *ctx, tc_tensor *x, int nnorm, tc_tensor *weight, double eps, TC_AT_);
#define tc_softmax(ctx, x, dim) tc_softmax_at(ctx, x, dim, TC_HERE_)
#define tc_log_softmax(ctx, x, dim) tc_log_softmax_at(ctx, x, dim, TC_HERE_)
#define tc_layer_norm(ctx, x, nnorm, w, b, eps) tc_layer_norm_at(ctx, x, nnorm, w, b, eps, TC_HERE_)
#define tc_rms_norm(ctx, x, nnorm, w, eps) tc_rms_norm_at(ctx, x, nnorm, w, eps, TC_HERE_)

/* Contractions.  matmul follows torch.matmul (1-D operands, broadcast batch
 * dims).  linear: y = x @ weight^T + bias, weight [out, in], bias [out] or
 * NULL.  Float dtypes only. */
TCDEF tc_tensor *tc_matmul_at(tc_ctx *ctx, tc_tensor *a, tc_tensor *b, TC_AT_);
TCDEF tc_tensor *tc_linear_at(tc_ctx *ctx, tc_tensor *x, tc_tensor *weight, tc_tensor *bias, TC_AT_);
#define tc_matmul(ctx, a, b) tc_matmul_at(ctx, a, b, TC_HERE_)
#define tc_linear(ctx, x, w, b) tc_linear_at(ctx, x, w, b, TC_HERE_)

/* Convolution and pooling, NCHW (a 3-D CHW input is treated as N=1 and
 * gives a 3-D result).  Zero-initialised options = PyTorch's defaults:
 * stride 1 (pooling: the kernel size), padding 0, dilation 1, groups 1. */
typedef struct tc_conv2d_opts {
    int stride[2], padding[2], dilation[2];
    int groups;
} tc_conv2d_opts;
typedef struct tc_pool2d_opts {
    int kernel[2];            /* required */
    int stride[2], padding[2], dilation[2];  /* dilation: max_pool2d only */
    int ceil_mode;
    int exclude_pad;          /* avg_pool2d: 1 = count_include_pad=False */
} tc_pool2d_opts;
/* weight [Cout, Cin/groups, kH, kW]; bias [Cout] or NULL; opts NULL = defaults */
TCDEF tc_tensor *tc_conv2d_at(tc_ctx *ctx, tc_tensor *x, tc_tensor *weight, tc_tensor *bias, const tc_conv2d_opts *opts, TC_AT_);
TCDEF tc_tensor *tc_max_pool2d_at(tc_ctx *ctx, tc_tensor *x, const tc_pool2d_opts *opts, TC_AT_);
TCDEF tc_tensor *tc_avg_pool2d_at(tc_ctx *ctx, tc_tensor *x, const tc_pool2d_opts *opts, TC_AT_);
TCDEF tc_tensor *tc_adaptive_avg_pool2d_at(tc_ctx *ctx, tc_tensor *x, int64_t out_h, int64_t out_w, TC_AT_);
/* Inference batch norm over dim 1 of an [N, C, ...] input; all four
 * per-channel tensors [C]; weight/bias may be NULL. */
TCDEF tc_tensor *tc_batch_norm_at(tc_ctx *ctx, tc_tensor *x, tc_tensor *mean, tc_tensor *var, tc_tensor *weight, tc_tensor *bias, double eps, TC_AT_);
#define tc_conv2d(ctx, x, w, b, opts) tc_conv2d_at(ctx, x, w, b, opts, TC_HERE_)
#define tc_max_pool2d(ctx, x, opts) tc_max_pool2d_at(ctx, x, opts, TC_HERE_)
#define tc_avg_pool2d(ctx, x, opts) tc_avg_pool2d_at(ctx, x, opts, TC_HERE_)
#define tc_adaptive_avg_pool2d(ctx, x, oh, ow) tc_adaptive_avg_pool2d_at(ctx, x, oh, ow, TC_HERE_)
#define tc_global_avg_pool2d(ctx, x) tc_adaptive_avg_pool2d_at(ctx, x, 1, 1, TC_HERE_)
#define tc_batch_norm(ctx, x, m, v, w, b, eps) tc_batch_norm_at(ctx, x, m, v, w, b, eps, TC_HERE_)

/* Shape ops.  concat needs n >= 1 tensors of equal rank, equal sizes except
 * along dim (dtypes promote like torch.cat).  split/chunk write views into
 * out[] (at most max_out) and return how many pieces the op produces; on
 * error they return -1 and fill every slot of out[] with the errored tensor,
 * so later ops propagate it.  split_sizes writes n pieces.  chunk follows
 * torch.chunk (pieces of ceil(n/chunks), possibly fewer pieces).
 * pad follows torch.nn.functional.pad mode='constant': pad holds npad/2
 * (before, after) pairs starting from the last dim; negatives crop. */
TCDEF tc_tensor *tc_concat_at(tc_ctx *ctx, int n, tc_tensor *const *xs, int dim, TC_AT_);
TCDEF int tc_split_at(tc_ctx *ctx, tc_tensor *x, int64_t split_size, int dim, tc_tensor **out, int max_out, TC_AT_);
TCDEF int tc_split_sizes_at(tc_ctx *ctx, tc_tensor *x, int n, const int64_t *sizes, int dim, tc_tensor **out, TC_AT_);
TCDEF int tc_chunk_at(tc_ctx *ctx, tc_tensor *x, int chunks, int dim, tc_tensor **out, int max_out, TC_AT_);
TCDEF tc_tensor *tc_pad_at(tc_ctx *ctx, tc_tensor *x, int npad, const int64_t *pad, double value, TC_AT_);
#define tc_concat(ctx, n, xs, dim) tc_concat_at(ctx, n, xs, dim, TC_HERE_)
#define tc_split(ctx, x, size, dim, out, max_out) tc_split_at(ctx, x, size, dim, out, max_out, TC_HERE_)
#define tc_split_sizes(ctx, x, n, sizes, dim, out) tc_split_sizes_at(ctx, x, n, sizes, dim, out, TC_HERE_)
#define tc_chunk(ctx, x, chunks, dim, out, max_out) tc_chunk_at(ctx, x, chunks, dim, out, max_out, TC_HERE_)
#define tc_pad(ctx, x, npad, pad, value) tc_pad_at(ctx, x, npad, pad, value, TC_HERE_)

/* Indexing; index tensors are i32 and range-checked: an index outside
 * [0, size) is a TC_ERR_INDEX error naming it (PyTorch raises too).
 * embedding: weight [V, D], idx any shape -> [*idx.shape, D].
 * gather: torch.gather (index same rank as x, out shape = index shape). */
TCDEF tc_tensor *tc_embedding_at(tc_ctx *ctx, tc_tensor *weight, tc_tensor *idx, TC_AT_);
TCDEF tc_tensor *tc_index_select_at(tc_ctx *ctx, tc_tensor *x, int dim, tc_tensor *idx, TC_AT_);
TCDEF tc_tensor *tc_gather_at(tc_ctx *ctx, tc_tensor *x, int dim, tc_tensor *idx, TC_AT_);
#define tc_embedding(ctx, w, idx) tc_embedding_at(ctx, w, idx, TC_HERE_)
#define tc_index_select(ctx, x, dim, idx) tc_index_select_at(ctx, x, dim, idx, TC_HERE_)
#define tc_gather(ctx, x, dim, idx) tc_gather_at(ctx, x, dim, idx, TC_HERE_)

/* torch.nn.functional.scaled_dot_product_attention without dropout:
 * q [..., L, E], k [..., S, E], v [..., S, Ev] (batch dims broadcast);
 * mask NULL, bool (true = attend) or float (added to the scores), broadcast
 * to [..., L, S] (no more dims than that); is_causal keeps the
 * top-left-aligned lower triangle and, as in PyTorch, excludes a mask;
 * scale <= 0 means 1/sqrt(E).  A row with every key masked gives NaN, as
 * softmax does (PyTorch up to 2.4; 2.5 and later return 0 there).  Runs as one fused flash-style kernel (the [L, S] scores never
 * reach memory; causal skips the blocks above the diagonal), eager and
 * compiled alike; a compiled softmax(q @ k^T * s [+ mask]) @ v written by
 * hand is matched into the same kernel. */
TCDEF tc_tensor *tc_scaled_dot_product_attention_at(tc_ctx *ctx, tc_tensor *q, tc_tensor *k, tc_tensor *v, tc_tensor *mask, int is_causal, double scale, TC_AT_);
#define tc_scaled_dot_product_attention(ctx, q, k, v, mask, causal, scale) \
    tc_scaled_dot_product_attention_at(ctx, q, k, v, mask, causal, scale, TC_HERE_)

/* ------------------------------------------------------------------------ */
/* Compiling a model function (torch.compile for C)                          */
/* ------------------------------------------------------------------------ */

/* 0 means "from the compile-time flags": TC_DEFAULT_MODE (itself
 * TC_MODE_DEFAULT unless defined before including the header). */
typedef enum tc_mode {
    TC_MODE_FROM_FLAGS = 0,
    TC_MODE_DEFAULT,
    TC_MODE_REDUCE_OVERHEAD,
    TC_MODE_MAX_AUTOTUNE
} tc_mode;

#ifndef TC_DEFAULT_MODE
#define TC_DEFAULT_MODE TC_MODE_DEFAULT
#endif
#ifndef TC_FULLGRAPH
#define TC_FULLGRAPH 0
#endif
#ifndef TC_DYNAMIC
#define TC_DYNAMIC 1   /* automatic dynamic shapes (torch's dynamic=None) */
#endif

/* Zero-initialise, then set what you need. */
typedef struct tc_compile_options {
    tc_mode mode;            /* 0: TC_DEFAULT_MODE                          */
    int fullgraph;           /* 0: TC_FULLGRAPH; 1: on; -1: off             */
    int num_inputs;          /* tensors passed to the function; 0: 1        */
    int num_outputs;         /* tensors it writes to outputs[]; 0: 1        */
    int recompile_limit;     /* compiled signatures kept; 0: 8              */
    int dynamic;             /* 0: TC_DYNAMIC; 1: automatic; 2: on (every
                                input dim marked as by tc_mark_dynamic; the
                                first that fits goes dynamic); -1: off
                                (every new size is a recompile)             */
    int decompose;           /* 0: with fusion on, softmax, log_softmax, the
                                norms and batch_norm become primitives that
                                fuse; 1: also silu, gelu, attention; -1 off */
    int fusion;              /* 0: fused kernels where the executor exists
                                (tc_ctx_isa != NONE); -1: op by op (debug)  */
    int freeze;              /* 1: the parameters (tensors the function
                                reads by identity) are constants: weights
                                are packed for the GEMM once, on the first
                                call, and batch_norm(conv2d(..)) is folded
                                into the conv's weights and bias when the
                                graph is compiled.  Changing a parameter's
                                values afterwards is then not seen; 0: off */
    const char *cache_dir;   /* max-autotune's on-disk cache of measured
                                choices (one small file each, safe when
                                processes share it); NULL: $XDG_CACHE_HOME/
                                tcompile or ~/.cache/tcompile; "": none     */
} tc_compile_options;

/* The function to compile: reads inputs[0..num_inputs), writes
 * outputs[0..num_outputs).  It must be a pure function of its inputs and of
 * the tensors it reads (parameters, by identity): a call whose guards match a
 * cached trace does not run it again. */
typedef void (*tc_model_fn)(tc_ctx *ctx, void *user, tc_tensor *const *inputs, tc_tensor **outputs);
typedef struct tc_fn tc_fn;

/* NULL only when ctx or fn is NULL or memory runs out. */
TCDEF tc_fn *tc_compile_at(tc_ctx *ctx, tc_model_fn fn, void *user, const tc_compile_options *opts,
                           tc_mode default_mode, int default_fullgraph, int default_dynamic, TC_AT_);
#define tc_compile(ctx, fn, user, opts) \
    tc_compile_at(ctx, fn, user, opts, TC_DEFAULT_MODE, TC_FULLGRAPH, TC_DYNAMIC, TC_HERE_)
/* Runs f: the first call with a new signature traces and compiles, later
 * calls whose guards match run the compiled graph.  outputs[] receives new
 * tensors in the caller's current scope (errored tensors on failure, as an
 * op would give).  In TC_MODE_REDUCE_OVERHEAD a cached call allocates
 * nothing: outputs[] are then owned by f and overwritten by the next call
 * (tc_clone one to keep it; tc_free ignores them).  TC_ERR_STATE when f is
 * already running (another thread; outputs[] are not touched then). */
TCDEF tc_result tc_call(tc_fn *f, tc_tensor *const *inputs, tc_tensor **outputs);
TCDEF const char *tc_fn_error(const tc_fn *f);   /* "" when the last call was OK */
TCDEF void tc_fn_free(tc_fn *f);

typedef struct tc_explain_info {
    tc_mode mode;
    int fullgraph;
    int graphs;              /* compiled graphs (segments) in the cache     */
    int graph_breaks;        /* breaks seen while tracing                   */
    int ops;                 /* op nodes over all graphs                    */
    int kernels;             /* launches per call (views are free): fused
                                kernels plus ops that run on their own      */
    int kernels_unfused;     /* what it would be op by op                   */
    int fused_kernels;       /* of kernels, those running generated code
                                (a fused kernel, or a contraction with a
                                fused epilogue)                             */
    int guards;              /* checks made before a cached graph runs      */
    int recompiles;          /* traces after the first                      */
    int compiles;            /* graphs fused and planned into a program:
                                once per signature (and per new segment of
                                a trace with breaks), never per call        */
    int dynamic_dims;        /* input dims made dynamic automatically       */
    int calls, cached_calls, eager_calls;
    int recorded_calls;      /* traces with breaks: recorded again, each
                                segment run from its cached program         */
    int64_t arena_bytes;     /* planned intermediates of the largest graph  */
    int64_t peak_bytes;      /* its arena plus its outputs: the most memory
                                one call holds beyond inputs and weights    */
    int inplace;             /* results written over an input that dies there */
    int tuned_launches;      /* max-autotune: launches measured             */
    int tuned_single_thread; /* of them, faster on one thread               */
    int tuned_tiles;         /* fused kernels run on register tiles smaller
                                than the default (measured or cached)      */
    int tuned_microkernels;  /* contractions run on a lower ISA level's GEMM
                                microkernels (measured or cached)          */
    int tuned_cached;        /* max-autotune: choices read from the on-disk
                                cache instead of measured                   */
    int tuned_dropped;       /* of them, lost to the default when measured
                                again in turns on first use, and replaced
                                by it (here and in the cache)               */
    int frozen_weights;      /* freeze: contractions whose weight is made
                                constant: packed once for the GEMM or, at
                                16 rows or fewer, for the GEMV kernel; or a
                                conv's with its batch norm folded in        */
    int traces;              /* times the function ran to be traced (the
                                copies tc_mark_dynamic traces included)     */
    tc_device device;        /* where its programs run (its first call's
                                inputs' device)                             */
    int cuda_graphs;         /* reduce-overhead on CUDA: programs replayed as
                                one captured CUDA graph per call            */
    int cuda_graph_failures; /* programs whose capture failed (they launch
                                kernel by kernel; the text says why)        */
} tc_explain_info;
/* Fills info (may be NULL) and, when text is not NULL, a readable report:
 * counts, each break with its reason and file:line, guards, the graphs. */
TCDEF tc_result tc_explain(const tc_fn *f, tc_explain_info *info, char *text, size_t cap);

/* Marks dim `dim` of input `input` dynamic before any recompile: the first
 * trace of a signature also traces copies of the input one and two elements
 * longer in that dim (zero padded) to fit the size-dependent attributes and
 * verify the fit at once: no later size is traced (a size used other than
 * affinely leaves the dim static).  Sizes 0 and 1 stay specialised.  Call
 * before tc_call. */
TCDEF tc_result tc_mark_dynamic(tc_fn *f, int input, int dim);

/* The compiled graph of cache entry `entry` (0 = the first signature) as
 * Graphviz DOT text, each fused kernel a cluster once the entry has run;
 * returns the length it needs (like snprintf), 0 when there is no such
 * graph.  `dot -Tsvg` renders it. */
TCDEF size_t tc_fn_dot(const tc_fn *f, int entry, char *buf, size_t cap);
/* The CUDA C the CUDA backend prints for cache entry `entry`'s fused
 * kernels (whichever device the function runs on: reading the GPU code
 * needs no GPU), once the entry has run; like tc_fn_dot, the length it
 * needs, 0 without such an entry (or built with TC_NO_CUDA). */
TCDEF size_t tc_fn_cuda_source(const tc_fn *f, int entry, char *buf, size_t cap);

/* Host code inside a model: fn gets the concrete tensor x and returns a new
 * tensor (made with tc_ ops, which run eagerly there, or filled by hand
 * through tc_data).  Eagerly it is just a call; inside a compiled function
 * it is a graph break (an error under fullgraph). */
typedef tc_tensor *(*tc_host_fn)(tc_ctx *ctx, void *user, tc_tensor *x);
TCDEF tc_tensor *tc_host_call_at(tc_ctx *ctx, tc_host_fn fn, void *user, tc_tensor *x, TC_AT_);
#define tc_host_call(ctx, fn, user, x) tc_host_call_at(ctx, fn, user, x, TC_HERE_)

/* An explicit graph break inside a compiled function (an error under
 * fullgraph).  No-op outside tracing. */
TCDEF void tc_graph_break_at(tc_ctx *ctx, TC_AT_);
#define tc_graph_break(ctx) tc_graph_break_at(ctx, TC_HERE_)

#ifdef __cplusplus
}
#endif

#endif /* TCOMPILE_H */
