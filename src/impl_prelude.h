/* Implementation prelude: system headers, allocation hooks, internal types
 * shared by every stage. */

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h> /* used only inside target("avx2,fma") functions */
#endif
#if defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#include <arm_neon.h> /* the GEMM microkernel's fused multiply-add */
#endif

#if defined(TC_MALLOC) && defined(TC_REALLOC) && defined(TC_FREE)
/* all three hooks given */
#elif !defined(TC_MALLOC) && !defined(TC_REALLOC) && !defined(TC_FREE)
#define TC_MALLOC(sz) malloc(sz)
#define TC_REALLOC(p, sz) realloc(p, sz)
#define TC_FREE(p) free(p)
#else
#error "tcompile: define all of TC_MALLOC, TC_REALLOC and TC_FREE, or none"
#endif

#ifndef TC_PARALLEL_MIN_WORK
#define TC_PARALLEL_MIN_WORK 32768
#endif

/* The built-in executor needs GNU C vector extensions (gcc, clang). */
#if defined(__GNUC__) || defined(__clang__)
#define TC__HAVE_VEXEC 1
#if defined(__x86_64__) || defined(__i386__)
#define TC__HAVE_VEXEC_X86 1
#endif
#endif
/* A read hint for data about to be used (nothing where the compiler has none).
 * Under gcc an asm statement, not __builtin_prefetch: gcc 12 takes the
 * builtin for a statement without effect and deleted whole loops of them
 * (tc__vst_pf_rest's, whose state is reset right after: not one prefetch
 * of it was in the binary) */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define tc__prefetch(p) __asm__ __volatile__("prefetcht0 %0" : : "m"(*(const char *)(p)))
#elif defined(__GNUC__) && !defined(__clang__) && defined(__aarch64__)
#define tc__prefetch(p) __asm__ __volatile__("prfm pldl1keep, %0" : : "Q"(*(const char *)(p)))
#elif defined(__GNUC__) || defined(__clang__)
#define tc__prefetch(p) __builtin_prefetch((p), 0, 3)
#else
#define tc__prefetch(p) ((void)(p))
#endif
#define TC__CAT_(a, b) a##b
#define TC__CAT(a, b) TC__CAT_(a, b)

/* TC_ISA_MAX (a build flag, -DTC_ISA_MAX=TC_ISA_AVX2): the widest ISA level
 * compiled; the levels above it are not instantiated (less to compile) and
 * a request for one at run time is clamped to it.  A tc_isa name or its
 * value, as a number the preprocessor can compare (TC__ISA_LEVELS). */
#define TC__ISA_LVL_TC_ISA_SCALAR 1
#define TC__ISA_LVL_TC_ISA_V128 2
#define TC__ISA_LVL_TC_ISA_AVX2 3
#define TC__ISA_LVL_TC_ISA_AVX512 4
#define TC__ISA_LVL_1 1
#define TC__ISA_LVL_2 2
#define TC__ISA_LVL_3 3
#define TC__ISA_LVL_4 4
#ifdef TC_ISA_MAX
#define TC__ISA_MAX_LVL TC__CAT(TC__ISA_LVL_, TC_ISA_MAX)
#if TC__ISA_MAX_LVL < 1 || TC__ISA_MAX_LVL > 4
#error "tcompile: TC_ISA_MAX must be TC_ISA_SCALAR, TC_ISA_V128, TC_ISA_AVX2 or TC_ISA_AVX512"
#endif
#else
#define TC__ISA_MAX_LVL 4
#endif

#ifdef __cplusplus
#define TC__RESTRICT __restrict__
#else
#define TC__RESTRICT restrict
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TC__UNUSED __attribute__((unused))
#define TC__PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TC__UNUSED
#define TC__PRINTF(a, b)
#endif

/* Every internal function is static: one translation unit holds them all. */
#define TC__FN static

#define TC__ALIGN 64
#define TC__MSG_CAP 512

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tc__storage {
    void *data;          /* aligned element memory                        */
    void *raw;           /* what TC_MALLOC returned (NULL when wrapped)   */
    size_t bytes;
    size_t cap;          /* bytes the block holds (>= bytes: reused ones) */
    int64_t refs;        /* tensors viewing it                            */
    int device;          /* TC_CPU, or TC_CUDA: data is a device address  */
} tc__storage;

struct tc_tensor {
    tc_ctx *ctx;
    tc_dtype dtype;
    int ndim;
    int64_t shape[TC_MAX_DIMS];
    int64_t strides[TC_MAX_DIMS];   /* elements */
    int64_t offset;                 /* elements */
    tc__storage *storage;
    tc_result status;
    const char *err;                /* owned message when status != OK    */
    int scope;                      /* depth of the owning scope          */
    int is_sentinel;                /* static errored tensor: never freed */
    int is_wrapped;                 /* a scalar argument (tc_add_scalar): it
                                       only promotes across categories      */
    tc_tensor *prev, *next;         /* links in the owning scope's list   */
    int lazy;                       /* 0: concrete; k > 0: value of node k-1
                                       of the context's trace (no storage) */
    int seg;                        /* k > 0: made concrete by graph break
                                       number ... of trace seg_gen: the
                                       next segment's input k-1            */
    unsigned seg_gen;
    tc_device device;               /* where its data lives (also while lazy) */
};

typedef struct tc__pool tc__pool;
typedef struct tc__trace tc__trace;
typedef struct tc__call tc__call; /* one op's call: ops/optable.h */

/* The compiler's hooks while a context traces (trace.c sets them with
 * ctx->trace): an op is recorded instead of run, and a host read of traced
 * data is a graph break (nonzero: refuse the access).  The earlier stages
 * (dispatch.c, tensor.c) reach the compiler only through them. */
typedef struct tc__trace_hooks {
    tc_tensor *(*op)(tc__call *c);
    int (*host_access)(const tc_tensor *t, const char *what, const char *file, int line);
} tc__trace_hooks;
typedef struct tc__scratch_cache tc__scratch_cache;
typedef struct tc__cuda_ctx tc__cuda_ctx; /* cuda/memory.c */

/* A freed tensor block kept for reuse (tensor.c, the storage cache). */
#define TC__STORE_CACHE_SLOTS 16
#define TC__STORE_CACHE_MIN ((size_t)256 * 1024)             /* smaller: malloc's bins */
#define TC__STORE_CACHE_DEFAULT ((size_t)256 * 1024 * 1024) /* the limit when 0      */
typedef struct tc__cached_block {
    void *raw, *data;
    size_t cap;
    uint64_t stamp;                 /* when it was freed: oldest goes first */
} tc__cached_block;

struct tc_ctx {
    tc_ctx_options opts;
    int num_threads;
    tc__pool *pool;
    tc_tensor **scope_head;         /* one list per depth, [0] = root      */
    int depth, scope_cap;
    int phantom_scopes;             /* begins that could not open (OOM)    */
    int scope_floor;                /* depth of the innermost scope tcompile
                                       opened around user code: the user's
                                       tc_scope_end stops above it          */
    tc_result first_status;
    char first_err[TC__MSG_CAP];
    int64_t live_tensors, live_bytes;
    tc__trace *trace;               /* non-NULL while tracing a tc_fn call  */
    const tc__trace_hooks *trace_hooks; /* how, while trace is set          */
    unsigned trace_gen;             /* counts traces (segment value stamps) */
    int cpu_features;               /* TC__CPU_* bits, read once: cpuid can
                                       trap to the hypervisor in a VM      */
    int thread_cap;                 /* > 0: at most this many threads per
                                       kernel (a tuned launch's choice)    */
    tc__scratch_cache *scratch;     /* kernels' scratch reuse, while a
                                       reduce-overhead program runs        */
    tc_isa isa;                     /* the fused-kernel executor's level    */
    tc__cuda_ctx *cuda;             /* made on the first device use         */
    tc_tensor *(*device_run)(tc__call *c); /* an eager op on CUDA inputs
                                       (set with the device's first tensor) */
    tc__cached_block cache[TC__STORE_CACHE_SLOTS];
    int ncache;
    size_t cached_bytes, cache_limit;
    uint64_t cache_clock;
};

#ifdef __cplusplus
}
#endif
