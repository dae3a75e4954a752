/* tcompile benchmark: eager vs compiled per mode, side by side in one run.
 *
 *   make bench                          every workload
 *   make bench WORKLOADS="ew softmax_ln"
 *   make bench WORKLOADS=compile        compile time against graph size
 *   ./build/bench [-t threads] [-o bench/out/results.csv] [workload...]
 *
 * Each row: median ms per call after warm-up (enough calls for ~0.3 s, at
 * least 5), and for compiled modes the first call's time (trace + compile +
 * run).  The `bandwidth` rows are the time it takes to just read the
 * workload's inputs and write its outputs once: the floor a memory-bound
 * kernel can reach.  Where the workload maps one f32 input to an output of
 * its size (ew, softmax_ln) it is measured as a copy of that input into an
 * output buffer, through the same thread pool, timed in the same rounds as
 * the candidates (so the host's drift hits it alike), and every candidate
 * of these workloads starts each call from a cold cache (evict_cache), as
 * the copy's floor does; elsewhere it is the
 * bytes at the STREAM-style copy bandwidth measured at start-up.  The
 * `handwritten` rows (ew, softmax_ln) run the same math as hand-written
 * register-resident vector C (bench/ref_isa.h) on the same threads: the
 * floor the math itself sets, which the bandwidth line does not show.
 *
 * A candidate whose call fails (tc_call's result) or whose result differs
 * from eager's is not timed: its row is dropped, with the reason on
 * stderr.  `--plant fail|wrong` makes the compiled modes fail or be wrong
 * on purpose (tests/run_all.sh checks that their rows go). */
#define _POSIX_C_SOURCE 200809L /* setenv, dlopen under -std=c99 */
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(TC__HAVE_VEXEC_X86)
#define REF_SFX avx512
#define REF_W 16
#define REF_ATTR __attribute__((target("avx512f,avx2,fma")))
#include "ref_isa.h"
#define REF_SFX avx2
#define REF_W 8
#define REF_ATTR __attribute__((target("avx2,fma")))
#include "ref_isa.h"
#endif
#if defined(TC__HAVE_VEXEC)
#define REF_SFX v128
#define REF_W 4
#define REF_ATTR
#include "ref_isa.h"
#endif

/* A nanosecond monotonic clock where there is one: the library's own is
 * gettimeofday's microseconds, too coarse for calls that take a few. */
static double now_ms(void) {
#if defined(CLOCK_MONOTONIC) && !defined(_WIN32)
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0) return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
#endif
    return tc__now_sec() * 1e3;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- STREAM-style copy bandwidth ------------------------------------------- */

typedef struct copy_part {
    float *dst;
    const float *src;
    size_t n;
} copy_part;

static void *copy_main(void *arg) {
    copy_part *p = (copy_part *)arg;
    size_t i;
    for (i = 0; i < p->n; i++) p->dst[i] = p->src[i];
    return NULL;
}

/* Bytes moved per second (read + write) copying n floats with `threads`. */
static double copy_bandwidth(int threads, size_t n) {
    float *a = (float *)malloc(n * sizeof(float)), *b = (float *)malloc(n * sizeof(float));
    double best = 0;
    int rep, t;
    if (!a || !b) {
        free(a);
        free(b);
        return 0;
    }
    for (t = 0; t < (int)n; t++) b[t] = (float)t, a[t] = 0;
    for (rep = 0; rep < 12; rep++) {
        pthread_t th[64];
        copy_part part[64];
        double t0 = now_ms(), ms;
        for (t = 0; t < threads && t < 64; t++) {
            size_t lo = n * (size_t)t / (size_t)threads, hi = n * (size_t)(t + 1) / (size_t)threads;
            part[t].dst = a + lo;
            part[t].src = b + lo;
            part[t].n = hi - lo;
            if (t > 0) pthread_create(&th[t], NULL, copy_main, &part[t]);
        }
        copy_main(&part[0]);
        for (t = 1; t < threads && t < 64; t++) pthread_join(th[t], NULL);
        ms = now_ms() - t0;
        if (ms > 0 && 2.0 * (double)n * sizeof(float) / (ms * 1e-3) > best) best = 2.0 * (double)n * sizeof(float) / (ms * 1e-3);
    }
    free(a);
    free(b);
    return best;
}

/* ---- the FMA peak ------------------------------------------------------------- */

/* Flops per second of independent multiply-add chains (12 of them: enough
 * to cover two pipes' latency on current cores) on `threads` threads at
 * the context's widest vector level, the best of 7 runs: the ceiling a
 * contraction's GFLOP/s is read against. */
#define FMA_CHAINS 12
#define FMA_BODY(FMA)                                                                                   \
    for (i = 0; i < iters; i++) {                                                                       \
        a0 = FMA(a0, m, c), a1 = FMA(a1, m, c), a2 = FMA(a2, m, c), a3 = FMA(a3, m, c);                 \
        a4 = FMA(a4, m, c), a5 = FMA(a5, m, c), a6 = FMA(a6, m, c), a7 = FMA(a7, m, c);                 \
        a8 = FMA(a8, m, c), a9 = FMA(a9, m, c), a10 = FMA(a10, m, c), a11 = FMA(a11, m, c);             \
    }
/* distinct starting values: equal chains would be merged into one by the
 * compiler (and the count of flops would be 12 times the work done) */
#define FMA_INIT(T, SET1)                                                                                   \
    T a0 = SET1(1.0f), a1 = SET1(1.001f), a2 = SET1(1.002f), a3 = SET1(1.003f), a4 = SET1(1.004f),          \
      a5 = SET1(1.005f), a6 = SET1(1.006f), a7 = SET1(1.007f), a8 = SET1(1.008f), a9 = SET1(1.009f),         \
      a10 = SET1(1.010f), a11 = SET1(1.011f);
#define FMA_SUM(ADD) ADD(ADD(ADD(ADD(a0, a1), ADD(a2, a3)), ADD(ADD(a4, a5), ADD(a6, a7))), ADD(ADD(a8, a9), ADD(a10, a11)))

#if defined(TC__HAVE_VEXEC_X86)
#include <immintrin.h>
__attribute__((target("avx512f"))) static float fma_avx512(long iters) {
    __m512 m = _mm512_set1_ps(0.99999f), c = _mm512_set1_ps(1e-6f);
    FMA_INIT(__m512, _mm512_set1_ps)
    long i;
    FMA_BODY(_mm512_fmadd_ps)
    return _mm512_reduce_add_ps(FMA_SUM(_mm512_add_ps));
}
__attribute__((target("avx2,fma"))) static float fma_avx2(long iters) {
    __m256 m = _mm256_set1_ps(0.99999f), c = _mm256_set1_ps(1e-6f), t;
    FMA_INIT(__m256, _mm256_set1_ps)
    float f[8];
    long i;
    FMA_BODY(_mm256_fmadd_ps)
    t = FMA_SUM(_mm256_add_ps);
    _mm256_storeu_ps(f, t);
    return f[0] + f[7];
}
#endif
#if defined(__aarch64__)
#include <arm_neon.h>
#define NEON_FMA(a, b, c) vfmaq_f32(c, a, b)
static float fma_v128(long iters) {
    float32x4_t m = vdupq_n_f32(0.99999f), c = vdupq_n_f32(1e-6f);
    FMA_INIT(float32x4_t, vdupq_n_f32)
    long i;
    FMA_BODY(NEON_FMA)
    return vaddvq_f32(FMA_SUM(vaddq_f32));
}
#else /* 128-bit vectors without a fused multiply-add (SSE2): a multiply and an add, 2 flops */
typedef float v4f __attribute__((vector_size(16)));
#define V4_FMA(a, b, c) ((a) * (b) + (c))
#define V4_ADD(a, b) ((a) + (b))
static v4f V4_SET1(float x) {
    v4f v = {x, x, x, x};
    return v;
}
static float fma_v128(long iters) {
    v4f m = {0.99999f, 0.99999f, 0.99999f, 0.99999f}, c = {1e-6f, 1e-6f, 1e-6f, 1e-6f}, t;
    FMA_INIT(v4f, V4_SET1)
    long i;
    FMA_BODY(V4_FMA)
    t = FMA_SUM(V4_ADD);
    return t[0] + t[3];
}
#endif

typedef struct fma_part {
    tc_isa isa;
    long iters;
    volatile float sink;
} fma_part;

static int fma_lanes(tc_isa isa) { return isa == TC_ISA_AVX512 ? 16 : isa == TC_ISA_AVX2 ? 8 : 4; }

static void *fma_main(void *arg) {
    fma_part *p = (fma_part *)arg;
#if defined(TC__HAVE_VEXEC_X86)
    if (p->isa == TC_ISA_AVX512) p->sink = fma_avx512(p->iters);
    else if (p->isa == TC_ISA_AVX2) p->sink = fma_avx2(p->iters);
    else
#endif
        p->sink = fma_v128(p->iters);
    return NULL;
}

static double fma_peak(int threads, tc_isa isa) {
    double best = 0;
    int rep, t;
    if (threads > 64) threads = 64;
    if (isa < TC_ISA_V128) isa = TC_ISA_V128;
    for (rep = 0; rep < 7; rep++) {
        pthread_t th[64];
        fma_part part[64];
        double t0 = now_ms(), ms, flops;
        for (t = 0; t < threads; t++) {
            part[t].isa = isa;
            part[t].iters = 2000000;
            if (t > 0) pthread_create(&th[t], NULL, fma_main, &part[t]);
        }
        fma_main(&part[0]);
        for (t = 1; t < threads; t++) pthread_join(th[t], NULL);
        ms = now_ms() - t0;
        flops = 2.0 * FMA_CHAINS * fma_lanes(isa) * (double)part[0].iters * threads;
        if (ms > 0 && flops / (ms * 1e-3) > best) best = flops / (ms * 1e-3);
    }
    return best;
}

/* --tune-under-load: busy threads, one per bench thread, while the
 * max-autotune modes make their choices (their first call), to show what
 * a cache measured on a loaded host does to later calls. */
static volatile int load_on;
static pthread_t load_th[64];
static int load_n;

static void *load_main(void *arg) {
    volatile double x = 1.0;
    (void)arg;
    while (load_on) x = x * 1.0000001 + 1e-9;
    return NULL;
}

static void load_start(int threads) {
    load_on = 1;
    for (load_n = 0; load_n < threads && load_n < 64; load_n++)
        if (pthread_create(&load_th[load_n], NULL, load_main, NULL) != 0) break;
}

static void load_stop(void) {
    int i;
    load_on = 0;
    for (i = 0; i < load_n; i++) pthread_join(load_th[i], NULL);
    load_n = 0;
}

/* ---- workloads ------------------------------------------------------------------ */

typedef struct workload {
    const char *name;
    int batch;
    int nin;
    int64_t shape[4][4];
    int ndim[4];
    tc_model_fn fn;
    double io_bytes; /* inputs read + outputs written once */
    int ref;         /* has a hand-written reference (ref_isa.h)      */
    double flops;    /* contractions: flops per call (GFLOP/s column)  */
    void *(*setup)(tc_ctx *ctx); /* parameters (persistent), passed as user */
    int ids;         /* > 0: input 0 holds token ids in [0, ids) (i32)  */
    int model;       /* one of the model workloads: in the table and chart */
} workload;

/* ---- models with parameters ------------------------------------------------------ */

static tc_tensor *param(tc_ctx *ctx, int ndim, int64_t a, int64_t b, int64_t c, int64_t d, double scale, uint64_t seed) {
    int64_t shape[4];
    tc_tensor *t;
    shape[0] = a, shape[1] = b, shape[2] = c, shape[3] = d;
    t = tc_rand_uniform(ctx, ndim, shape, -scale, scale, seed);
    tc_persist(t);
    return t;
}

/* mlp_large: 1024 -> 4096 (GELU) -> 1024, weights [out, in] as torch's Linear */
typedef struct mlp_params {
    tc_tensor *w1, *b1, *w2, *b2;
} mlp_params;

static void *setup_mlp_large(tc_ctx *ctx) {
    static mlp_params p;
    if (!p.w1) {
        p.w1 = param(ctx, 2, 4096, 1024, 0, 0, 1.0 / 32, 101);
        p.b1 = param(ctx, 1, 4096, 0, 0, 0, 0.1, 102);
        p.w2 = param(ctx, 2, 1024, 4096, 0, 0, 1.0 / 64, 103);
        p.b2 = param(ctx, 1, 1024, 0, 0, 0, 0.1, 104);
    }
    return &p;
}

static void model_mlp(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    const mlp_params *p = (const mlp_params *)user;
    out[0] = tc_linear(ctx, tc_gelu(ctx, tc_linear(ctx, in[0], p->w1, p->b1)), p->w2, p->b2);
}

/* resblock: ResNet's basic block at 64 channels, 56 x 56:
 * relu(bn2(conv2(relu(bn1(conv1(x))))) + x), 3x3 convolutions, padding 1 */
typedef struct res_params {
    tc_tensor *w1, *w2, *bn[2][4];
} res_params;

static void *setup_resblock(tc_ctx *ctx) {
    static res_params p;
    int i;
    if (!p.w1) {
        p.w1 = param(ctx, 4, 64, 64, 3, 3, 1.0 / 24, 201);
        p.w2 = param(ctx, 4, 64, 64, 3, 3, 1.0 / 24, 202);
        for (i = 0; i < 2; i++) {
            p.bn[i][0] = param(ctx, 1, 64, 0, 0, 0, 0.1, 210 + (uint64_t)i); /* running mean */
            p.bn[i][1] = tc_add_scalar(ctx, param(ctx, 1, 64, 0, 0, 0, 0.5, 220 + (uint64_t)i), 1.0);
            tc_persist(p.bn[i][1]); /* running var, in [0.5, 1.5] */
            p.bn[i][2] = param(ctx, 1, 64, 0, 0, 0, 1.0, 230 + (uint64_t)i);
            p.bn[i][3] = param(ctx, 1, 64, 0, 0, 0, 0.1, 240 + (uint64_t)i);
        }
    }
    return &p;
}

static void model_resblock(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    const res_params *p = (const res_params *)user;
    tc_conv2d_opts o;
    tc_tensor *h;
    memset(&o, 0, sizeof o);
    o.padding[0] = o.padding[1] = 1;
    h = tc_conv2d(ctx, in[0], p->w1, NULL, &o);
    h = tc_relu(ctx, tc_batch_norm(ctx, h, p->bn[0][0], p->bn[0][1], p->bn[0][2], p->bn[0][3], 1e-5));
    h = tc_conv2d(ctx, h, p->w2, NULL, &o);
    h = tc_batch_norm(ctx, h, p->bn[1][0], p->bn[1][1], p->bn[1][2], p->bn[1][3], 1e-5);
    out[0] = tc_relu(ctx, tc_add(ctx, h, in[0]));
}

/* pool_dw: the window kernels in a MobileNet-style stem: max_pool2d 3 x 3
 * stride 2 over [8, 32, 112, 112], then a depthwise 3 x 3 conv (bias,
 * relu) and a 1 x 1 conv to 64 channels */
typedef struct dw_params {
    tc_tensor *wd, *bd, *wp;
} dw_params;

static void *setup_pool_dw(tc_ctx *ctx) {
    static dw_params p;
    if (!p.wd) {
        p.wd = param(ctx, 4, 32, 1, 3, 3, 1.0 / 3, 301);
        p.bd = param(ctx, 1, 32, 0, 0, 0, 0.1, 302);
        p.wp = param(ctx, 4, 64, 32, 1, 1, 1.0 / 6, 303);
    }
    return &p;
}

static void model_pool_dw(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    const dw_params *p = (const dw_params *)user;
    tc_pool2d_opts po;
    tc_conv2d_opts o;
    tc_tensor *h;
    memset(&po, 0, sizeof po);
    po.kernel[0] = po.kernel[1] = 3;
    po.stride[0] = po.stride[1] = 2;
    po.padding[0] = po.padding[1] = 1;
    memset(&o, 0, sizeof o);
    o.padding[0] = o.padding[1] = 1;
    o.groups = 32;
    h = tc_relu(ctx, tc_conv2d(ctx, tc_max_pool2d(ctx, in[0], &po), p->wd, p->bd, &o));
    out[0] = tc_conv2d(ctx, h, p->wp, NULL, NULL);
}

/* ---- the model workloads (the table and chart of docs/PERF.md) ----------------- */

/* mlp_small: 64 -> 256 -> 256 -> 16, ReLU, weights [out, in] */
static void *setup_mlp_small(tc_ctx *ctx) {
    static mlp_params p[2];
    if (!p[0].w1) {
        p[0].w1 = param(ctx, 2, 256, 64, 0, 0, 1.0 / 8, 401);
        p[0].b1 = param(ctx, 1, 256, 0, 0, 0, 0.1, 402);
        p[0].w2 = param(ctx, 2, 256, 256, 0, 0, 1.0 / 16, 403);
        p[0].b2 = param(ctx, 1, 256, 0, 0, 0, 0.1, 404);
        p[1].w1 = param(ctx, 2, 16, 256, 0, 0, 1.0 / 16, 405);
        p[1].b1 = param(ctx, 1, 16, 0, 0, 0, 0.1, 406);
    }
    return p;
}

static void model_mlp_small(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    const mlp_params *p = (const mlp_params *)user;
    tc_tensor *h = tc_relu(ctx, tc_linear(ctx, in[0], p[0].w1, p[0].b1));
    h = tc_relu(ctx, tc_linear(ctx, h, p[0].w2, p[0].b2));
    out[0] = tc_linear(ctx, h, p[1].w1, p[1].b1);
}

/* A pre-LN transformer block: x + attn(ln1(x)), then + mlp(ln2(x)). */
typedef struct tblock {
    tc_tensor *ln1_w, *ln1_b, *qkv_w, *qkv_b, *proj_w, *proj_b, *ln2_w, *ln2_b, *fc1_w, *fc1_b, *fc2_w, *fc2_b;
} tblock;

static void tblock_init(tc_ctx *ctx, tblock *b, int64_t d, int64_t hidden, uint64_t seed) {
    b->ln1_w = param(ctx, 1, d, 0, 0, 0, 0.1, seed + 1);
    b->ln1_b = param(ctx, 1, d, 0, 0, 0, 0.1, seed + 2);
    b->qkv_w = param(ctx, 2, 3 * d, d, 0, 0, 1.0 / sqrt((double)d), seed + 3);
    b->qkv_b = param(ctx, 1, 3 * d, 0, 0, 0, 0.02, seed + 4);
    b->proj_w = param(ctx, 2, d, d, 0, 0, 1.0 / sqrt((double)d), seed + 5);
    b->proj_b = param(ctx, 1, d, 0, 0, 0, 0.02, seed + 6);
    b->ln2_w = param(ctx, 1, d, 0, 0, 0, 0.1, seed + 7);
    b->ln2_b = param(ctx, 1, d, 0, 0, 0, 0.1, seed + 8);
    b->fc1_w = param(ctx, 2, hidden, d, 0, 0, 1.0 / sqrt((double)d), seed + 9);
    b->fc1_b = param(ctx, 1, hidden, 0, 0, 0, 0.02, seed + 10);
    b->fc2_w = param(ctx, 2, d, hidden, 0, 0, 1.0 / sqrt((double)hidden), seed + 11);
    b->fc2_b = param(ctx, 1, d, 0, 0, 0, 0.02, seed + 12);
}

/* x [B, T, d] through one block with `heads` heads (causal for GPT). */
static tc_tensor *tblock_fwd(tc_ctx *ctx, const tblock *b, tc_tensor *x, int64_t heads, int causal, int tanh_gelu) {
    int64_t B = tc_dim(x, 0), T = tc_dim(x, 1), d = tc_dim(x, 2), sh[5], sm[3];
    int perm_qkv[5] = {2, 0, 3, 1, 4}, perm_back[4] = {0, 2, 1, 3};
    tc_tensor *h = tc_layer_norm(ctx, x, 1, b->ln1_w, b->ln1_b, 1e-5), *qkv, *a;
    sh[0] = B, sh[1] = T, sh[2] = 3, sh[3] = heads, sh[4] = d / heads;
    sm[0] = B, sm[1] = T, sm[2] = d;
    qkv = tc_permute(ctx, tc_reshape(ctx, tc_linear(ctx, h, b->qkv_w, b->qkv_b), 5, sh), perm_qkv);
    a = tc_scaled_dot_product_attention(ctx, tc_select(ctx, qkv, 0, 0), tc_select(ctx, qkv, 0, 1), tc_select(ctx, qkv, 0, 2),
                                        NULL, causal, 0.0);
    x = tc_add(ctx, x, tc_linear(ctx, tc_reshape(ctx, tc_permute(ctx, a, perm_back), 3, sm), b->proj_w, b->proj_b));
    h = tc_linear(ctx, tc_layer_norm(ctx, x, 1, b->ln2_w, b->ln2_b, 1e-5), b->fc1_w, b->fc1_b);
    h = tanh_gelu ? tc_gelu_tanh(ctx, h) : tc_gelu(ctx, h);
    return tc_add(ctx, x, tc_linear(ctx, h, b->fc2_w, b->fc2_b));
}

/* vit_block: ViT-S's block, d 384, 6 heads, 197 tokens, MLP 1536 */
static void *setup_vit_block(tc_ctx *ctx) {
    static tblock b;
    if (!b.ln1_w) tblock_init(ctx, &b, 384, 1536, 500);
    return &b;
}

static void model_vit_block(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    out[0] = tblock_fwd(ctx, (const tblock *)user, in[0], 6, 0, 0);
}

/* gpt_tiny: GPT-2's architecture, 4 layers, d 256, 4 heads, vocab 4096,
 * T 128: ids -> embeddings -> blocks -> ln_f -> logits (tied head) */
typedef struct gpt_params {
    tc_tensor *wte, *wpe, *lnf_w, *lnf_b;
    tblock h[4];
} gpt_params;

static void *setup_gpt_tiny(tc_ctx *ctx) {
    static gpt_params p;
    int i;
    if (!p.wte) {
        p.wte = param(ctx, 2, 4096, 256, 0, 0, 0.1, 600);
        p.wpe = param(ctx, 2, 128, 256, 0, 0, 0.05, 601);
        p.lnf_w = param(ctx, 1, 256, 0, 0, 0, 0.1, 602);
        p.lnf_b = param(ctx, 1, 256, 0, 0, 0, 0.1, 603);
        for (i = 0; i < 4; i++) tblock_init(ctx, &p.h[i], 256, 1024, 610 + 20 * (uint64_t)i);
    }
    return &p;
}

static void model_gpt_tiny(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    const gpt_params *p = (const gpt_params *)user;
    tc_tensor *x = tc_add(ctx, tc_embedding(ctx, p->wte, in[0]), p->wpe); /* [B, T, d] + [T, d] */
    int i;
    for (i = 0; i < 4; i++) x = tblock_fwd(ctx, &p->h[i], x, 4, 1, 1);
    out[0] = tc_linear(ctx, tc_layer_norm(ctx, x, 1, p->lnf_w, p->lnf_b, 1e-5), p->wte, NULL);
}

/* ResNets of basic blocks: cnn_small (3 x 64 x 64: a 3 x 3 stem to 32,
 * stages of 32 and 64 channels, 10 classes) and resnet18 (torchvision's
 * ResNet-18 at 224 x 224, 1000 classes); batch norm after every conv
 * (folded under freeze). */
typedef struct rn_conv {
    tc_tensor *w, *bn[4];
    int stride;
} rn_conv;

typedef struct rn_params {
    int small, nblocks;
    rn_conv stem, c[16][3]; /* per block: conv1, conv2, downsample (w NULL: none) */
    tc_tensor *fc_w, *fc_b;
} rn_params;

static uint64_t rn_seed = 700;

static void rn_conv_init(tc_ctx *ctx, rn_conv *c, int64_t cout, int64_t cin, int64_t k, int stride) {
    c->w = param(ctx, 4, cout, cin, k, k, sqrt(6.0 / (double)(cin * k * k)), rn_seed++);
    c->bn[0] = param(ctx, 1, cout, 0, 0, 0, 0.1, rn_seed++);                        /* mean */
    c->bn[1] = tc_persist(tc_add_scalar(ctx, param(ctx, 1, cout, 0, 0, 0, 0.3, rn_seed++), 1.0)); /* var */
    c->bn[2] = tc_persist(tc_add_scalar(ctx, param(ctx, 1, cout, 0, 0, 0, 0.1, rn_seed++), 1.0)); /* weight */
    c->bn[3] = param(ctx, 1, cout, 0, 0, 0, 0.1, rn_seed++);                        /* bias */
    c->stride = stride;
}

static void rn_init(tc_ctx *ctx, rn_params *p, int small) {
    static const int64_t w18[4] = {64, 128, 256, 512}, wsm[2] = {32, 64};
    const int64_t *w = small ? wsm : w18;
    int stages = small ? 2 : 4, s, b;
    int64_t in = w[0];
    p->small = small;
    rn_conv_init(ctx, &p->stem, w[0], 3, small ? 3 : 7, small ? 1 : 2);
    p->nblocks = 0;
    for (s = 0; s < stages; s++)
        for (b = 0; b < 2; b++) {
            rn_conv *c = p->c[p->nblocks++];
            int stride = b == 0 && s > 0 ? 2 : 1;
            rn_conv_init(ctx, &c[0], w[s], in, 3, stride);
            rn_conv_init(ctx, &c[1], w[s], w[s], 3, 1);
            if (stride != 1 || in != w[s]) rn_conv_init(ctx, &c[2], w[s], in, 1, stride);
            in = w[s];
        }
    p->fc_w = param(ctx, 2, small ? 10 : 1000, in, 0, 0, 1.0 / sqrt((double)in), rn_seed++);
    p->fc_b = param(ctx, 1, small ? 10 : 1000, 0, 0, 0, 0.1, rn_seed++);
}

static tc_tensor *rn_cbn(tc_ctx *ctx, const rn_conv *c, tc_tensor *x, int relu) {
    tc_conv2d_opts o;
    tc_tensor *h;
    memset(&o, 0, sizeof o);
    o.stride[0] = o.stride[1] = c->stride;
    o.padding[0] = o.padding[1] = (int)(tc_dim(c->w, 2) / 2);
    h = tc_batch_norm(ctx, tc_conv2d(ctx, x, c->w, NULL, &o), c->bn[0], c->bn[1], c->bn[2], c->bn[3], 1e-5);
    return relu ? tc_relu(ctx, h) : h;
}

static void model_resnet(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    const rn_params *p = (const rn_params *)user;
    tc_tensor *x = rn_cbn(ctx, &p->stem, in[0], 1);
    int b;
    if (!p->small) {
        tc_pool2d_opts po;
        memset(&po, 0, sizeof po);
        po.kernel[0] = po.kernel[1] = 3;
        po.stride[0] = po.stride[1] = 2;
        po.padding[0] = po.padding[1] = 1;
        x = tc_max_pool2d(ctx, x, &po);
    }
    for (b = 0; b < p->nblocks; b++) {
        const rn_conv *c = p->c[b];
        tc_tensor *id = c[2].w ? rn_cbn(ctx, &c[2], x, 0) : x;
        x = tc_relu(ctx, tc_add(ctx, rn_cbn(ctx, &c[1], rn_cbn(ctx, &c[0], x, 1), 0), id));
    }
    out[0] = tc_linear(ctx, tc_flatten(ctx, tc_adaptive_avg_pool2d(ctx, x, 1, 1), 1, -1), p->fc_w, p->fc_b);
}

static void *setup_cnn_small(tc_ctx *ctx) {
    static rn_params p;
    if (!p.fc_w) rn_init(ctx, &p, 1);
    return &p;
}

static void *setup_resnet18(tc_ctx *ctx) {
    static rn_params p;
    if (!p.fc_w) rn_init(ctx, &p, 0);
    return &p;
}

static void model_matmul(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    (void)user;
    out[0] = tc_matmul(ctx, in[0], in[1]);
}

static void model_ew(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    tc_tensor *x = in[0];
    (void)user;
    out[0] = tc_mul(ctx, tc_gelu_tanh(ctx, tc_add_scalar(ctx, tc_mul_scalar(ctx, x, 1.5), 0.25)), tc_sigmoid(ctx, x));
}

/* call_overhead: one tiny op, so that a call's time is the call itself:
 * guards, the launch list, the threads (a compiled mode's floor) */
static void model_call_overhead(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    (void)user;
    out[0] = tc_add_scalar(ctx, in[0], 1.0);
}

static void model_softmax_ln(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    tc_tensor *x = in[0];
    (void)user;
    out[0] = tc_layer_norm(ctx, tc_add(ctx, tc_mul_scalar(ctx, tc_softmax(ctx, x, -1), 2.0), x), 1, NULL, NULL, 1e-5);
}

/* attention: causal self-attention through the fused kernel, 6 heads of 64
 * over 1024 positions (GPT-style); and the same math written by hand as
 * ViT's softmax(q @ k^T / 8) @ v over 197 tokens, which eager runs op by
 * op through a materialized [197, 197] score matrix per head and the
 * compiler matches back into the fused kernel. */
static void model_sdpa_causal(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    (void)user;
    out[0] = tc_scaled_dot_product_attention(ctx, in[0], in[1], in[2], NULL, 1, 0.0);
}

static void model_attention_by_hand(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    tc_tensor *s = tc_div_scalar(ctx, tc_matmul(ctx, in[0], tc_transpose(ctx, in[1], -2, -1)), 8.0);
    (void)user;
    out[0] = tc_matmul(ctx, tc_softmax(ctx, s, -1), in[2]);
}

/* cnn_small's contractions per image: the stem (3 -> 32, 64 x 64), four
 * 32 -> 32 convs at 64 x 64, the stride-2 block (32 -> 64 and its 1 x 1
 * downsample, 32 x 32), three 64 -> 64 convs at 32 x 32 and the classifier */
#define CNN_SMALL_FLOPS                                                                                                 \
    (2.0 * (32 * 27 * 4096.0 + 4 * 32 * 32 * 9 * 4096.0 + 64 * 32 * 9 * 1024.0 + 64 * 32 * 1024.0 +                   \
            3 * 64 * 64 * 9 * 1024.0 + 64 * 10))

static workload workloads[] = {
    {"call_overhead", 1, 1, {{16}}, {1}, model_call_overhead, 2.0 * 4.0 * 16, 0, 0, NULL, 0, 0},
    {"ew", 1, 1, {{4 << 20}}, {1}, model_ew, 2.0 * 4.0 * (4 << 20), 1, 0, NULL, 0, 0},
    {"softmax_ln", 1, 1, {{4096, 1024}}, {2}, model_softmax_ln, 2.0 * 4.0 * 4096 * 1024, 1, 0, NULL, 0, 0},
    /* C[M,N] = A[M,K] @ B[K,N]; named by (M, N, K) */
    {"gemm_1024", 1, 2, {{1024, 1024}, {1024, 1024}}, {2, 2}, model_matmul, 4.0 * 3 * 1024 * 1024, 0,
     2.0 * 1024 * 1024 * 1024, NULL, 0, 0},
    {"gemm_64x4096x1024", 1, 2, {{64, 1024}, {1024, 4096}}, {2, 2}, model_matmul,
     4.0 * (64 * 1024 + 1024 * 4096 + 64 * 4096), 0, 2.0 * 64 * 4096 * 1024, NULL, 0, 0},
    {"gemv_4096", 1, 2, {{1, 4096}, {4096, 4096}}, {2, 2}, model_matmul, 4.0 * (4096 + 4096 * 4096 + 4096), 0,
     2.0 * 4096 * 4096, NULL, 0, 0},
    {"sdpa_causal", 1, 3, {{1, 6, 1024, 64}, {1, 6, 1024, 64}, {1, 6, 1024, 64}}, {4, 4, 4}, model_sdpa_causal,
     4.0 * 4 * 6 * 1024 * 64, 0, 2.0 * 2 * 6 * 1024 * 1024 * 64 / 2, NULL, 0, 0},
    {"attention_by_hand", 8, 3, {{8, 6, 197, 64}, {8, 6, 197, 64}, {8, 6, 197, 64}}, {4, 4, 4},
     model_attention_by_hand, 4.0 * 4 * 8 * 6 * 197 * 64, 0, 2.0 * 2 * 8 * 6 * 197 * 197 * 64, NULL, 0, 0},
    {"resblock", 1, 1, {{1, 64, 56, 56}}, {4}, model_resblock, 4.0 * (2 * 64 * 56 * 56 + 2 * 64 * 64 * 9), 0,
     2.0 * 2 * 64 * 64 * 9 * 56 * 56, setup_resblock, 0, 0},
    {"pool_dw", 8, 1, {{8, 32, 112, 112}}, {4}, model_pool_dw, 4.0 * 8 * (32 * 112 * 112 + 64 * 56 * 56), 0,
     2.0 * 8 * 56 * 56 * (32 * 9 + 64 * 32), setup_pool_dw, 0, 0},
    /* the model table: batch 1, 8, 32 each; flops count the contractions */
#define TC_BENCH_MODELS(B)                                                                                              \
    {"mlp_small", B, 1, {{B, 64}}, {2}, model_mlp_small, 4.0 * B * (64 + 16), 0, 2.0 * B * (64 * 256 + 256 * 256 + 256 * 16), \
     setup_mlp_small, 0, 1},                                                                                           \
    {"mlp_large", B, 1, {{B, 1024}}, {2}, model_mlp, 4.0 * (2.0 * 4096 * 1024 + B * 2048.0), 0, 4.0 * B * 4096 * 1024,    \
     setup_mlp_large, 0, 1},                                                                                           \
    {"vit_block", B, 1, {{B, 197, 384}}, {3}, model_vit_block, 4.0 * 2 * B * 197 * 384, 0,                                \
     2.0 * B * 197 * (384 * 384 * 12 + 2 * 197 * 384), setup_vit_block, 0, 1},                                        \
    {"gpt_tiny", B, 1, {{B, 128}}, {2}, model_gpt_tiny, 4.0 * B * 128 * (1 + 4096), 0,                                   \
     2.0 * B * 128 * (4 * (256 * 256 * 12 + 128 * 256) + 256 * 4096), setup_gpt_tiny, 4096, 1},                        \
    {"cnn_small", B, 1, {{B, 3, 64, 64}}, {4}, model_resnet, 4.0 * B * (3 * 64 * 64 + 10), 0, B * CNN_SMALL_FLOPS,          \
     setup_cnn_small, 0, 1},                                                                                           \
    {"resnet18", B, 1, {{B, 3, 224, 224}}, {4}, model_resnet, 4.0 * B * (3 * 224 * 224 + 1000), 0, B * 3.64e9,         \
     setup_resnet18, 0, 1}
    TC_BENCH_MODELS(1), TC_BENCH_MODELS(8), TC_BENCH_MODELS(32),
#undef TC_BENCH_MODELS
};
#define NWORK ((int)(sizeof workloads / sizeof workloads[0]))

typedef struct row {
    const char *workload;
    int batch;
    const char *mode;
    int threads;
    double ms, compile_ms;
} row;

static row rows[256];
static int nrows;

static void add_row(const char *w, int batch, const char *mode, int threads, double ms, double compile_ms) {
    if (nrows < 256) {
        row r;
        r.workload = w;
        r.batch = batch;
        r.mode = mode;
        r.threads = threads;
        r.ms = ms;
        r.compile_ms = compile_ms;
        rows[nrows++] = r;
    }
}

/* ---- OpenBLAS, when installed (bench-only; the library never links it) ---------- */

typedef void (*sgemm_fn)(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
                         const float *b, int ldb, float beta, float *c, int ldc);
typedef void (*sgemv_fn)(int order, int ta, int m, int n, float alpha, const float *a, int lda, const float *x, int incx,
                         float beta, float *y, int incy);
static sgemm_fn openblas_sgemm;
static sgemv_fn openblas_sgemv; /* M = 1: a matrix-vector product is sgemv's, not a 1-row sgemm */

/* dlopen'ed so that building the bench needs no BLAS; its idle threads
 * are told to sleep at once, or they would spin on the cores the other
 * candidates are timed on. */
static void openblas_load(int threads) {
    static const char *const names[] = {"libopenblas.so.0", "libopenblas.so"};
    static const char *const pinned[] = {"OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE"};
    char saved[2][128];
    size_t i;
    setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
    /* Hosts may pin OpenBLAS to an older core (these set Haswell: its AVX2
     * kernel where the CPU has AVX-512), which would make the row a weak
     * reference; it reads them when loaded, so they are unset for the
     * load only (as `env -u` would), and the core it picked is printed. */
    for (i = 0; i < 2; i++) {
        const char *v = getenv(pinned[i]);
        snprintf(saved[i], sizeof saved[i], "%s", v ? v : "");
        if (v) unsetenv(pinned[i]);
    }
    for (i = 0; i < sizeof names / sizeof names[0] && !openblas_sgemm; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        void (*set_threads)(int);
        char *(*corename)(void);
        if (!h) continue;
        *(void **)&openblas_sgemm = dlsym(h, "cblas_sgemm");
        *(void **)&openblas_sgemv = dlsym(h, "cblas_sgemv");
        *(void **)&set_threads = dlsym(h, "openblas_set_num_threads");
        *(void **)&corename = dlsym(h, "openblas_get_corename");
        if (set_threads) set_threads(threads);
        if (openblas_sgemm && corename) printf("openblas: %s core%s\n", corename(), saved[0][0] ? " (OPENBLAS_CORETYPE unset for it)" : "");
    }
    for (i = 0; i < 2; i++)
        if (saved[i][0]) setenv(pinned[i], saved[i], 1);
}

/* ---- hand-written references ------------------------------------------------------ */

typedef struct ref_job {
    const char *name;
    int blas;      /* OpenBLAS sgemm rather than ref_isa.h       */
    int copy;      /* a copy of x to y: the bandwidth floor       */
    const float *b;
    int m, n_, k;  /* blas: the GEMM's sizes                      */
    tc_isa isa;
    const float *x;
    float *y;
    float *yraw;   /* what y was allocated as (y: aligned up)    */
    float *xraw;   /* warm copy: its own source                   */
    int nt;        /* the output streamed past the caches        */
    int64_t n;     /* softmax_ln: floats per row                 */
    int64_t count; /* elements (ew) or rows (softmax_ln)         */
    int64_t work;
} ref_job;

/* Elements (ew) or rows (softmax_ln) [b, e) at the context's ISA level. */
static void ref_part(void *arg, int64_t b, int64_t e) {
    ref_job *j = (ref_job *)arg;
#if defined(TC__HAVE_VEXEC)
    int sm = strcmp(j->name, "softmax_ln") == 0;
    float *l = sm ? (float *)malloc(2 * sizeof(float) * (size_t)j->n) : NULL;
    if (sm && !l) return;
    switch (j->isa) {
#if defined(TC__HAVE_VEXEC_X86)
    case TC_ISA_AVX512:
        if (sm) ref_softmax_ln_avx512(j->x, j->y, j->n, b, e, l, l + j->n, j->nt);
        else ref_ew_avx512(j->x, j->y, b, e, j->nt);
        break;
    case TC_ISA_AVX2:
        if (sm) ref_softmax_ln_avx2(j->x, j->y, j->n, b, e, l, l + j->n, j->nt);
        else ref_ew_avx2(j->x, j->y, b, e, j->nt);
        break;
#endif
    default:
        if (sm) ref_softmax_ln_v128(j->x, j->y, j->n, b, e, l, l + j->n, j->nt);
        else ref_ew_v128(j->x, j->y, b, e, j->nt);
    }
    free(l);
#else
    (void)j, (void)b, (void)e;
#endif
}

static void copy_range(void *arg, int64_t b, int64_t e) {
    ref_job *j = (ref_job *)arg;
    memcpy(j->y + b, j->x + b, sizeof(float) * (size_t)(e - b));
}

/* Sets j up to copy w's input into a buffer of its size, when that moves
 * the bytes w's call does (one f32 input, one output of its size); 0 else. */
static int copy_setup(workload *w, tc_tensor **in, ref_job *j) {
    int64_t numel = tc_numel(in[0]);
    memset(j, 0, sizeof *j);
    /* the streaming workloads (those with a hand-written reference); not
     * call_overhead, whose 16 floats would be timed from a cold cache */
    if (!w->ref || w->nin != 1 || tc_type(in[0]) != TC_F32 || w->io_bytes != 2.0 * sizeof(float) * (double)numel) return 0;
    j->copy = 1;
    j->x = (const float *)tc_data(in[0]);
    j->count = numel;
    j->work = numel * 64; /* as much parallelism as the pool gives */
    j->y = (float *)malloc(sizeof(float) * (size_t)numel);
    if (j->y) memset(j->y, 0, sizeof(float) * (size_t)numel); /* faulted in before timing */
    j->copy = j->y != NULL && j->x != NULL;
    return j->copy;
}

/* The other workloads read parameters and intermediates that stay cached
 * between calls, so their floor is a warm copy through the same thread
 * pool of a buffer as large as the bytes they must move (io_bytes:
 * inputs, weights, outputs once), half read and half written, timed in the
 * same rounds: mlp_large's 32 MB of weights against a 32 MB copy, which is
 * the last-level cache's bandwidth where they fit and memory's where not. */
static int warm_copy_setup(workload *w, ref_job *j) {
    int64_t n = (int64_t)(w->io_bytes / (2.0 * sizeof(float)));
    float *x;
    memset(j, 0, sizeof *j);
    if (n < 1) return 0;
    x = (float *)malloc(sizeof(float) * (size_t)n);
    j->y = (float *)malloc(sizeof(float) * (size_t)n);
    if (!x || !j->y) {
        free(x);
        free(j->y);
        j->y = NULL;
        return 0;
    }
    memset(x, 0, sizeof(float) * (size_t)n);
    memset(j->y, 0, sizeof(float) * (size_t)n);
    j->x = j->xraw = x;
    j->count = n;
    j->work = n * 64;
    j->copy = 1;
    return 1;
}

/* Sets j up for w's hand-written reference; 0 when there is none here. */
static int ref_setup(tc_ctx *ctx, workload *w, tc_tensor **in, ref_job *j) {
    int64_t numel = tc_numel(in[0]);
    memset(j, 0, sizeof *j);
    if (!w->ref || tc_ctx_isa(ctx) == TC_ISA_NONE || tc_ctx_isa(ctx) == TC_ISA_SCALAR) return 0;
    j->name = w->name;
    j->isa = tc_ctx_isa(ctx);
    j->x = (const float *)tc_data(in[0]);
    j->n = w->ndim[0] == 2 ? w->shape[0][1] : numel;
    j->count = w->ndim[0] == 2 ? w->shape[0][0] : numel;
    j->work = numel * 8;
    /* softmax_ln's rows: two vectors a step, each row on a vector's alignment */
    if (!j->x || j->n % 32) return 0;
    j->yraw = (float *)malloc(sizeof(float) * (size_t)numel + 64);
    if (!j->yraw) return 0;
    j->y = (float *)((char *)j->yraw + (64 - (uintptr_t)j->yraw % 64) % 64);
    /* the library's own rule for a kernel's result (vexec.c) */
    j->nt = numel * (int64_t)sizeof(float) >= TC__NT_STORE_BYTES;
    memset(j->y, 0, sizeof(float) * (size_t)numel); /* faulted in before timing */
    return 1;
}

/* Sets j up for OpenBLAS's sgemm on w (a GEMM workload); 0 when absent. */
static int blas_setup(workload *w, tc_tensor **in, ref_job *j) {
    memset(j, 0, sizeof *j);
    if (!openblas_sgemm || w->fn != model_matmul || (w->shape[0][0] == 1 && !openblas_sgemv)) return 0;
    j->blas = 1;
    j->x = (const float *)tc_data(in[0]);
    j->b = (const float *)tc_data(in[1]);
    j->m = (int)w->shape[0][0];
    j->k = (int)w->shape[0][1];
    j->n_ = (int)w->shape[1][1];
    j->y = (float *)malloc(sizeof(float) * (size_t)j->m * (size_t)j->n_);
    return j->y != NULL && j->x && j->b;
}

static void ref_run(tc_ctx *ctx, ref_job *j) {
    /* CblasRowMajor = 101, CblasNoTrans = 111, CblasTrans = 112 */
    if (j->blas && j->m == 1) /* y[N] = x[K] B[K, N] = B^T x */
        openblas_sgemv(101, 112, j->k, j->n_, 1.0f, j->b, j->n_, j->x, 1, 0.0f, j->y, 1);
    else if (j->blas)
        openblas_sgemm(101, 111, 111, j->m, j->n_, j->k, 1.0f, j->x, j->k, j->b, j->n_, 0.0f, j->y, j->n_);
    else tc__parallel_for(ctx, j->count, j->work, j->copy ? copy_range : ref_part, j);
}

/* ---- timing: every candidate once per round, rounds interleaved ------------------ */

/* One way to compute the workload: eager, a compiled mode or the reference. */
typedef struct cand {
    const char *mode;
    tc_fn *f;      /* compiled, or NULL                          */
    ref_job *ref;  /* the hand-written reference, or NULL        */
    double first;  /* compiled: the first call's ms              */
    double t[400];
    int n;
    int failed;    /* a call failed while timed: the row is dropped */
} cand;

static void *bench_user; /* the running workload's parameters */
static int tune_under_load; /* --tune-under-load */
/* --mode M: time that compiled mode alone beside the floor (checked
 * against eager, which is not timed): with its weights the only ones in
 * the caches, as in an application, where the interleaved candidates each
 * evict the others' packed copies */
static const char *only_mode;
static double fma_flops;    /* the FMA peak of the threads in use */
/* --device cuda: the workloads' inputs on the GPU, every mode's calls timed
 * to the end of their GPU work (tc_cuda_synchronize); rows named cuda:<mode> */
static tc_device bench_dev = TC_CPU;

/* A result's floats on the host (valid until the scope ends), NULL on error. */
static const float *host_f32(tc_ctx *ctx, tc_tensor *t) {
    if (tc_device_of(t) != TC_CPU) t = tc_to(ctx, t, TC_CPU);
    return tc_status(t) == TC_OK && tc_type(t) == TC_F32 ? (const float *)tc_data(t) : NULL;
}

/* ---- a cold last-level cache before each call of a streaming workload ----------- */

/* Bytes of the largest cache this CPU's first core shares (sysfs), or 32 MB
 * where that cannot be read.  Not sysconf: glibc there sums every L3 of a
 * socket (384 MB on a 12-CCD EPYC), where one core sees 32 MB. */
static size_t llc_bytes(void) {
    size_t best = 0;
    int i;
    for (i = 0; i < 8; i++) {
        char path[96], unit = 0;
        unsigned long v = 0;
        FILE *fp;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
        if (!(fp = fopen(path, "r"))) continue;
        if (fscanf(fp, "%lu%c", &v, &unit) >= 1) {
            size_t b = (size_t)v * (unit == 'K' ? 1024u : unit == 'M' ? 1048576u : 1u);
            if (b > best) best = b;
        }
        fclose(fp);
    }
    return best ? best : (size_t)32 << 20;
}

static unsigned char *evict_buf;
static size_t evict_len;
static volatile unsigned char evict_sink; /* the loads must happen */

/* Reads three caches' worth of other memory, a load per line, so that what
 * the last call left in the cache is gone: a candidate that followed the
 * copy (its input still cached) would otherwise run from the cache while
 * one that followed eager ran from memory.  The workloads this runs for
 * move about as many bytes as the cache holds, so their times swung by 2x
 * with the order of the round; the bandwidth floor is memory's. */
static void evict_cache(void) {
    unsigned char acc = 0;
    size_t i;
    if (!evict_buf) {
        evict_len = 3 * llc_bytes();
        if (evict_len < ((size_t)64 << 20)) evict_len = (size_t)64 << 20;
        if (!(evict_buf = (unsigned char *)malloc(evict_len))) return;
        memset(evict_buf, 1, evict_len);
    }
    for (i = 0; i < evict_len; i += 64) acc = (unsigned char)(acc + evict_buf[i]);
    evict_sink = acc;
}

static double run_once(tc_ctx *ctx, workload *w, cand *c, tc_tensor **in, int cold) {
    tc_tensor *out[1] = {NULL};
    double t0;
    if (cold) evict_cache();
    tc_scope_begin(ctx);
    t0 = now_ms();
    if (c->ref) ref_run(ctx, c->ref);
    else if (c->f && tc_call(c->f, in, out) != TC_OK && !c->failed) {
        c->failed = 1;
        fprintf(stderr, "bench: %s %s dropped: a timed call failed: %s\n", w->name, c->mode, tc_fn_error(c->f));
    } else if (!c->f) w->fn(ctx, bench_user, in, out);
    if (bench_dev == TC_CUDA) tc_cuda_synchronize(ctx); /* the call's GPU work, not just its queueing */
    else if (out[0]) (void)tc_data(out[0]);
    t0 = now_ms() - t0;
    tc_scope_end(ctx);
    return t0;
}

/* Medians per call after 3 warm-up calls each.  The host is shared and its
 * speed drifts over seconds, so candidates alternate call by call (each
 * round runs all of them in turn) rather than each taking its own stretch
 * of time: the ratios between them are what the rows are for.  cold: each
 * call starts with the last-level cache emptied of its data (evict_cache). */
static void time_interleaved(tc_ctx *ctx, workload *w, cand *c, int nc, tc_tensor **in, int cold) {
    double t_start, budget = 300.0 * nc;
    int i, r, rounds = 0;
    for (r = 0; r < 3; r++)
        for (i = 0; i < nc; i++) run_once(ctx, w, &c[i], in, cold);
    t_start = now_ms();
    while (rounds < 400 && (rounds < 5 || now_ms() - t_start < budget)) {
        for (i = 0; i < nc; i++) { /* the order turns, so no one always runs after the slow eager */
            cand *k = &c[(i + rounds) % nc];
            k->t[k->n++] = run_once(ctx, w, k, in, cold);
        }
        rounds++;
    }
    for (i = 0; i < nc; i++) qsort(c[i].t, (size_t)c[i].n, sizeof c[i].t[0], cmp_d);
}

/* Max relative error of a result against the eager one, each element's
 * error taken relative to its own size or, for values that cancelled to
 * near zero (dot products), to 1e-3 of the largest. */
static double rel_err(const float *pe, const float *pc, int64_t n) {
    double m = 0, big = 0;
    int64_t i;
    if (!pe || !pc) return 1e30;
    for (i = 0; i < n; i++)
        if (fabs((double)pe[i]) > big) big = fabs((double)pe[i]);
    for (i = 0; i < n; i++) {
        double d = fabs((double)pe[i] - pc[i]) / (fabs((double)pe[i]) + 1e-3 * big + 1e-30);
        if (d > m || d != d) m = d;
    }
    return m;
}

/* Checks a compiled (f) or hand-written (ref) result against eager before
 * timing: a benchmark of failed calls or wrong answers measures nothing.
 * 1 when `mode` may be timed; else 0, and why on stderr. */
static int check_result(tc_ctx *ctx, workload *w, const char *mode, tc_fn *f, ref_job *ref, tc_tensor **in) {
    tc_tensor *e[1] = {NULL}, *c[1] = {NULL};
    double m = 0;
    int ok = 1;
    tc_scope_begin(ctx);
    w->fn(ctx, bench_user, in, e);
    if (tc_status(e[0]) != TC_OK) {
        fprintf(stderr, "bench: %s %s dropped: eager failed: %s\n", w->name, mode, tc_error(e[0]));
        ok = 0;
    } else if (ref) {
        ref_run(ctx, ref);
        m = rel_err(host_f32(ctx, e[0]), ref->y, tc_numel(e[0]));
    } else if (tc_call(f, in, c) != TC_OK) {
        fprintf(stderr, "bench: %s %s dropped: the call failed: %s\n", w->name, mode, tc_fn_error(f));
        ok = 0;
    } else if (tc_numel(c[0]) != tc_numel(e[0]) || tc_type(c[0]) != TC_F32) {
        fprintf(stderr, "bench: %s %s dropped: its result is not eager's size or dtype\n", w->name, mode);
        ok = 0;
    } else {
        m = rel_err(host_f32(ctx, e[0]), host_f32(ctx, c[0]), tc_numel(e[0]));
    }
    tc_scope_end(ctx);
    if (ok && !(m <= 1e-3)) {
        fprintf(stderr, "bench: %s %s dropped: differs from eager (max rel err %g)\n", w->name, mode, m);
        ok = 0;
    }
    return ok;
}

/* --plant: the compiled modes run the workload with a planted fault, so
 * that the checks above can be seen to drop their rows. */
static enum { PLANT_NONE, PLANT_FAIL, PLANT_WRONG } plant;
static tc_model_fn plant_inner;

static void model_planted(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    int64_t bad = -7;
    plant_inner(ctx, user, in, out);
    if (plant == PLANT_FAIL) out[0] = tc_reshape(ctx, out[0], 1, &bad); /* an errored output */
    else out[0] = tc_add_scalar(ctx, out[0], 1.0);
}

static void run_workload(tc_ctx *ctx, workload *w, int threads, double bw) {
    /* default-unfused: the default mode run op by op (fusion = -1), so
     * each row pair shows what fusion and the GEMM epilogues buy */
    static const struct {
        const char *name;
        tc_mode mode;
        int fusion;
    } modes[] = {{"default", TC_MODE_DEFAULT, 0},
                 {"reduce-overhead", TC_MODE_REDUCE_OVERHEAD, 0},
                 {"max-autotune", TC_MODE_MAX_AUTOTUNE, 0},
                 {"default-unfused", TC_MODE_DEFAULT, -1}};
    static cand c[10];
    tc_tensor *in[4];
    ref_job ref, blas, copy;
    int i, m, nc = 0, cold;
    static const char *const cuda_modes[] = {"cuda:eager", "cuda:default", "cuda:reduce-overhead", "cuda:max-autotune",
                                             "cuda:default-unfused"};
    if (bench_dev == TC_CUDA && w->setup) { /* its weights are host tensors, which eager cannot mix with GPU inputs */
        printf("bench: %s skipped on cuda: its weights are set up on the host\n", w->name);
        return;
    }
    for (i = 0; i < w->nin; i++) {
        in[i] = i == 0 && w->ids > 0 ? tc_cast(ctx, tc_rand_uniform(ctx, w->ndim[i], w->shape[i], 0.0, w->ids - 1.0, 42), TC_I32)
                                     : tc_rand_normal(ctx, w->ndim[i], w->shape[i], 0.0, 1.0, 42 + (uint64_t)i);
        if (bench_dev == TC_CUDA) in[i] = tc_to(ctx, in[i], TC_CUDA);
        tc_persist(in[i]);
    }
    bench_user = w->setup ? w->setup(ctx) : NULL;
    {   /* eager is every row's reference: without it there is nothing to compare */
        tc_tensor *e[1] = {NULL};
        tc_scope_begin(ctx);
        w->fn(ctx, bench_user, in, e);
        if (tc_status(e[0]) != TC_OK) fprintf(stderr, "bench: %s dropped: eager failed: %s\n", w->name, tc_error(e[0]));
        i = tc_status(e[0]) != TC_OK;
        tc_scope_end(ctx);
        if (i) {
            for (i = 0; i < w->nin; i++) tc_free(in[i]);
            return;
        }
    }
    memset(c, 0, sizeof c);
    if (!only_mode) c[nc++].mode = bench_dev == TC_CUDA ? cuda_modes[0] : "eager";
    for (m = 0; m < (int)(sizeof modes / sizeof modes[0]); m++) {
        tc_compile_options o;
        double t0;
        tc_result r;
        tc_tensor *out[1] = {NULL};
        if (only_mode && strcmp(only_mode, modes[m].name) != 0) continue;
        memset(&o, 0, sizeof o);
        o.mode = modes[m].mode;
        o.fusion = modes[m].fusion;
        o.freeze = w->setup != NULL; /* inference: the parameters are constant */
        o.num_inputs = w->nin;
        o.cache_dir = "bench/out/tune-cache"; /* max-autotune's choices: rm -rf to measure again */
        c[nc].mode = bench_dev == TC_CUDA ? cuda_modes[m + 1] : modes[m].name;
        plant_inner = w->fn;
        c[nc].f = tc_compile(ctx, plant != PLANT_NONE ? model_planted : w->fn, bench_user, &o);
        tc_scope_begin(ctx);
        if (tune_under_load && o.mode == TC_MODE_MAX_AUTOTUNE) load_start(threads);
        t0 = now_ms();
        r = tc_call(c[nc].f, in, out);
        c[nc].first = now_ms() - t0;
        load_stop();
        tc_scope_end(ctx);
        if (r != TC_OK) {
            fprintf(stderr, "bench: %s %s dropped: the first call failed: %s\n", w->name, modes[m].name, tc_fn_error(c[nc].f));
            tc_fn_free(c[nc].f);
            memset(&c[nc], 0, sizeof c[nc]);
            continue;
        }
        if (!check_result(ctx, w, modes[m].name, c[nc].f, NULL, in)) {
            tc_fn_free(c[nc].f);
            memset(&c[nc], 0, sizeof c[nc]);
            continue;
        }
        nc++;
    }
    memset(&blas, 0, sizeof blas);
    memset(&ref, 0, sizeof ref);
    memset(&copy, 0, sizeof copy);
    if (bench_dev == TC_CUDA) { /* the CPU's references measure another machine */
        time_interleaved(ctx, w, c, nc, in, 0);
        for (i = 0; i < nc; i++) {
            if (!c[i].failed) add_row(w->name, w->batch, c[i].mode, threads, c[i].t[c[i].n / 2], c[i].first);
            tc_fn_free(c[i].f);
        }
        for (i = 0; i < w->nin; i++) tc_free(in[i]);
        return;
    }
    if (ref_setup(ctx, w, in, &ref) && check_result(ctx, w, "handwritten", NULL, &ref, in)) {
        c[nc].mode = "handwritten";
        c[nc++].ref = &ref;
    }
    if (blas_setup(w, in, &blas) && check_result(ctx, w, "openblas", NULL, &blas, in)) {
        c[nc].mode = "openblas";
        c[nc++].ref = &blas;
    }
    cold = copy_setup(w, in, &copy);
    if (cold || warm_copy_setup(w, &copy)) {
        c[nc].mode = "bandwidth";
        c[nc++].ref = &copy;
    }
    /* the workloads with a copy floor of their input stream memory: timed
     * from a cold cache, as that floor is */
    time_interleaved(ctx, w, c, nc, in, cold);
    for (i = 0; i < nc; i++) {
        if (!c[i].failed) add_row(w->name, w->batch, c[i].mode, threads, c[i].t[c[i].n / 2], c[i].first);
        tc_fn_free(c[i].f);
    }
    free(ref.yraw);
    free(blas.y);
    if (!copy.copy && bw > 0) add_row(w->name, w->batch, "bandwidth", threads, w->io_bytes / bw * 1e3, 0);
    free(copy.y);
    free(copy.xraw);
    for (i = 0; i < w->nin; i++) tc_free(in[i]);
}

/* Whether a workload before index j has this name (the batch sizes of one
 * workload are entries of their own). */
static int name_seen(const char *name, int j) {
    int i;
    for (i = 0; i < j; i++)
        if (strcmp(workloads[i].name, name) == 0) return 1;
    return 0;
}

static const workload *find_workload(const char *name, int batch) {
    int i;
    for (i = 0; i < NWORK; i++)
        if (strcmp(workloads[i].name, name) == 0 && workloads[i].batch == batch) return &workloads[i];
    return NULL;
}

static void write_outputs(const char *csv, const char *cpu) {
    FILE *fp;
    int i;
    char dir[512];
    const char *slash = strrchr(csv, '/');
    if (slash && (size_t)(slash - csv) < sizeof dir) {
        char cmd[600];
        memcpy(dir, csv, (size_t)(slash - csv));
        dir[slash - csv] = 0;
        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
        if (system(cmd) != 0) fprintf(stderr, "bench: cannot create %s\n", dir);
    }
    fp = fopen(csv, "w");
    if (fp) {
        fprintf(fp, "workload,batch,device,mode,threads,ms,compile_ms\n");
        for (i = 0; i < nrows; i++)
            fprintf(fp, "%s,%d,%s,%s,%d,%.6f,%.2f\n", rows[i].workload, rows[i].batch, cpu, rows[i].mode, rows[i].threads,
                    rows[i].ms, rows[i].compile_ms);
        fclose(fp);
    } else {
        fprintf(stderr, "bench: cannot write %s\n", csv);
    }
    printf("\n%-18s %5s %-16s %7s %10s %11s %9s %8s %6s %8s\n", "workload", "batch", "mode", "threads", "ms", "compile_ms",
           "vs eager", "GFLOP/s", "%peak", "GB/s");
    for (i = 0; i < nrows; i++) {
        double eager = 0;
        int j;
        for (j = 0; j < nrows; j++)
            if (strcmp(rows[j].workload, rows[i].workload) == 0 && rows[j].batch == rows[i].batch &&
                strcmp(rows[j].mode, strncmp(rows[i].mode, "cuda:", 5) == 0 ? "cuda:eager" : "eager") == 0)
                eager = rows[j].ms; /* the same device's eager */
        const workload *w = find_workload(rows[i].workload, rows[i].batch);
        double sec = rows[i].ms * 1e-3;
        printf("%-18s %5d %-16s %7d %10.5f %11.2f %8.2fx", rows[i].workload, rows[i].batch, rows[i].mode,
               rows[i].threads, rows[i].ms, rows[i].compile_ms, rows[i].ms > 0 ? eager / rows[i].ms : 0);
        if (w && w->flops > 0 && sec > 0 && strcmp(rows[i].mode, "bandwidth") != 0) {
            printf(" %8.1f", w->flops / sec * 1e-9);
            if (fma_flops > 0 && strncmp(rows[i].mode, "cuda:", 5) != 0) printf(" %5.0f%%", 100.0 * w->flops / sec / fma_flops);
            else printf(" %6s", "");
        } else printf(" %8s %6s", "", "");
        /* bytes the workload must move (inputs + outputs once) per second */
        if (w && sec > 0) printf(" %8.1f", w->io_bytes / sec * 1e-9);
        printf("\n");
    }
    printf("\nwrote %s (device %s)\n", csv, cpu);
}

/* The row of (workload, batch, mode), or NULL. */
static const row *find_row(const char *workload, int batch, const char *mode) {
    int i;
    for (i = 0; i < nrows; i++)
        if (strcmp(rows[i].workload, workload) == 0 && rows[i].batch == batch && strcmp(rows[i].mode, mode) == 0)
            return &rows[i];
    return NULL;
}

/* The model table (Markdown) and a bar chart of the compiled modes'
 * speedups over eager (SVG, written here: no plotting dependency), beside
 * the CSV, for the model workloads that ran. */
static void write_model_report(const char *csv, const char *cpu, int threads) {
    static const char *const modes[3] = {"default", "reduce-overhead", "max-autotune"};
    static const char *const colors[3] = {"#4e79a7", "#f28e2b", "#59a14f"};
    char path[600];
    const char *slash = strrchr(csv, '/');
    int dirlen = slash ? (int)(slash - csv) + 1 : 0, i, m, ngroups = 0;
    double maxs = 1.0;
    FILE *fp;
    for (i = 0; i < NWORK; i++)
        if (workloads[i].model && find_row(workloads[i].name, workloads[i].batch, "eager")) {
            ngroups++;
            for (m = 0; m < 3; m++) {
                const row *e = find_row(workloads[i].name, workloads[i].batch, "eager"),
                          *r = find_row(workloads[i].name, workloads[i].batch, modes[m]);
                if (r && r->ms > 0 && e->ms / r->ms > maxs) maxs = e->ms / r->ms;
            }
        }
    if (!ngroups) return;
    snprintf(path, sizeof path, "%.*smodels.md", dirlen, csv);
    if ((fp = fopen(path, "w")) != NULL) {
        fprintf(fp, "Mean time per call (median of interleaved runs after warm-up), %s, %d threads; "
                    "speedup over eager in parentheses; first call = trace + compile + run (default mode).\n\n",
                cpu, threads);
        fprintf(fp, "| model | batch | eager ms | default ms | reduce-overhead ms | max-autotune ms | first call ms |\n");
        fprintf(fp, "|---|---:|---:|---:|---:|---:|---:|\n");
        for (i = 0; i < NWORK; i++) {
            const row *e = find_row(workloads[i].name, workloads[i].batch, "eager");
            if (!workloads[i].model || !e) continue;
            fprintf(fp, "| %s | %d | %.3f |", workloads[i].name, workloads[i].batch, e->ms);
            for (m = 0; m < 3; m++) {
                const row *r = find_row(workloads[i].name, workloads[i].batch, modes[m]);
                if (r && r->ms > 0) fprintf(fp, " %.3f (%.2fx) |", r->ms, e->ms / r->ms);
                else fprintf(fp, " |");
            }
            {
                const row *r = find_row(workloads[i].name, workloads[i].batch, "default");
                fprintf(fp, " %.1f |\n", r ? r->compile_ms : 0.0);
            }
        }
        fclose(fp);
        printf("wrote %s\n", path);
    }
    snprintf(path, sizeof path, "%.*sspeedups.svg", dirlen, csv);
    if ((fp = fopen(path, "w")) != NULL) {
        const int gw = 54, left = 56, top = 40, ph = 220, width = left + ngroups * gw + 20, height = top + ph + 110;
        double tick;
        int g = 0;
        fprintf(fp, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
                    "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                width, height);
        fprintf(fp, "<text x=\"%d\" y=\"18\" font-size=\"13\">tcompile: speedup over eager (%s, %d threads)</text>\n",
                left, cpu, threads);
        for (tick = 0; tick <= maxs + 1e-9; tick += maxs > 8 ? 2.0 : maxs > 4 ? 1.0 : 0.5) {
            double y = top + ph - tick / maxs * ph;
            fprintf(fp, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\"/>\n", left, width - 10, y, y,
                    tick == 1.0 ? "#888" : "#e5e5e5");
            fprintf(fp, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.1fx</text>\n", left - 4, y + 4, tick);
        }
        for (i = 0; i < NWORK; i++) {
            const row *e = find_row(workloads[i].name, workloads[i].batch, "eager");
            int x0 = left + g * gw + 6;
            if (!workloads[i].model || !e) continue;
            for (m = 0; m < 3; m++) {
                const row *r = find_row(workloads[i].name, workloads[i].batch, modes[m]);
                double sp = r && r->ms > 0 ? e->ms / r->ms : 0, h = sp / maxs * ph;
                fprintf(fp, "<rect x=\"%d\" y=\"%.1f\" width=\"13\" height=\"%.1f\" fill=\"%s\"><title>%s b%d %s: %.2fx</title></rect>\n",
                        x0 + 14 * m, top + ph - h, h, colors[m], workloads[i].name, workloads[i].batch, modes[m], sp);
            }
            fprintf(fp, "<text transform=\"translate(%d,%d) rotate(-50)\" text-anchor=\"end\">%s b%d</text>\n", x0 + 24,
                    top + ph + 12, workloads[i].name, workloads[i].batch);
            g++;
        }
        for (m = 0; m < 3; m++)
            fprintf(fp, "<rect x=\"%d\" y=\"26\" width=\"10\" height=\"10\" fill=\"%s\"/><text x=\"%d\" y=\"35\">%s</text>\n",
                    width - 330 + 110 * m, colors[m], width - 316 + 110 * m, modes[m]);
        fprintf(fp, "</svg>\n");
        fclose(fp);
        printf("wrote %s\n", path);
    }
}

static void cpu_name(char *buf, size_t cap, tc_ctx *ctx) {
    FILE *fp = fopen("/proc/cpuinfo", "r");
    char line[256];
    snprintf(buf, cap, "cpu");
    while (fp && fgets(line, sizeof line, fp)) {
        if (strncmp(line, "model name", 10) == 0) {
            char *v = strchr(line, ':'), *p;
            if (v) {
                v += 2;
                v[strcspn(v, "\n")] = 0;
                for (p = v; *p; p++)
                    if (*p == ',') *p = ' ';
                snprintf(buf, cap, "%s", v);
            }
            break;
        }
    }
    if (fp) fclose(fp);
    {
        size_t n = strlen(buf);
        snprintf(buf + n, cap - n, " (%s)", tc_isa_name(tc_ctx_isa(ctx)));
    }
}

/* ---- compile time against graph size ------------------------------------------- */

/* `compile` (by name only: `make bench WORKLOADS=compile`): the first call
 * of a new compiled function (trace, passes, fusion, plan and one run on a
 * [8, 64] input: the run is microseconds) for graphs of 1k, 10k and 100k
 * ops of three kinds, with the time per op and the slope of log(time)
 * against log(ops) fitted over the three sizes (1 is linear, 2 quadratic),
 * and the second call's time (a replay: nothing is compiled again). */
static const char *const compile_kinds[3] = {"pointwise chain", "softmax+layer_norm", "reshape chain"};
static int compile_kind, compile_ops;

static void model_compile_graph(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    tc_tensor *x = in[0];
    int64_t flat[1] = {512}, rows[2] = {8, 64}, cols[2] = {64, 8};
    int i;
    (void)user;
    if (compile_kind == 0) {
        for (i = 0; i < compile_ops; i++) x = i & 1 ? tc_add_scalar(ctx, x, 0.001) : tc_mul_scalar(ctx, x, 0.999);
    } else if (compile_kind == 1) { /* 12 ops a pair once decomposed */
        for (i = 0; i < compile_ops / 12; i++) x = tc_layer_norm(ctx, tc_softmax(ctx, x, -1), 1, NULL, NULL, 1e-5);
    } else {
        for (i = 0; i < compile_ops; i++)
            x = tc_reshape(ctx, x, i % 3 == 0 ? 1 : 2, i % 3 == 0 ? flat : i % 3 == 1 ? cols : rows);
        x = tc_add_scalar(ctx, tc_reshape(ctx, x, 2, rows), 1.0);
    }
    out[0] = x;
}

/* ms of tc_call(f) on x (its result checked), -1 when it failed */
static double compile_call_ms(tc_ctx *ctx, tc_fn *f, tc_tensor *x) {
    tc_tensor *y = NULL;
    tc_result r;
    double t0;
    tc_scope_begin(ctx);
    t0 = now_ms();
    r = tc_call(f, &x, &y);
    t0 = now_ms() - t0;
    if (r != TC_OK) fprintf(stderr, "bench: compile: %s\n", tc_fn_error(f));
    tc_scope_end(ctx);
    return r == TC_OK ? t0 : -1;
}

static void run_compile_sweep(tc_ctx *ctx) {
    static const int ops[3] = {1000, 10000, 100000};
    int64_t shape[2] = {8, 64};
    tc_tensor *x = tc_persist(tc_rand_normal(ctx, 2, shape, 0.0, 1.0, 42));
    int k, s, rep;
    printf("\ncompile time against graph size (first call: trace + passes + fusion + plan + a run on [8, 64]; "
           "best of 3, of 1 at 100k)\n");
    printf("%-20s %8s %12s %10s %14s\n", "graph", "ops", "first ms", "us/op", "second ms");
    for (k = 0; k < 3; k++) {
        double lx[3], ly[3], mx = 0, my = 0, sxy = 0, sxx = 0;
        int ok = 1;
        compile_kind = k;
        for (s = 0; s < 3; s++) {
            double best = -1, second = -1;
            compile_ops = ops[s];
            for (rep = 0; rep < (s < 2 ? 3 : 1); rep++) {
                tc_fn *f = tc_compile(ctx, model_compile_graph, NULL, NULL);
                double t = compile_call_ms(ctx, f, x);
                if (t >= 0 && (best < 0 || t < best)) best = t;
                if (rep == 0) second = compile_call_ms(ctx, f, x);
                tc_fn_free(f);
            }
            if (best <= 0) {
                ok = 0;
                continue;
            }
            printf("%-20s %8d %12.1f %10.2f %14.3f\n", compile_kinds[k], ops[s], best, best * 1e3 / ops[s], second);
            lx[s] = log((double)ops[s]);
            ly[s] = log(best);
        }
        if (!ok) continue;
        for (s = 0; s < 3; s++) mx += lx[s] / 3, my += ly[s] / 3;
        for (s = 0; s < 3; s++) sxy += (lx[s] - mx) * (ly[s] - my), sxx += (lx[s] - mx) * (lx[s] - mx);
        printf("%-20s slope %.2f (log time against log ops; 1 is linear)\n", compile_kinds[k], sxy / sxx);
    }
    tc_free(x);
}

int main(int argc, char **argv) {
    tc_ctx_options o;
    tc_ctx *ctx;
    const char *csv = "bench/out/results.csv";
    const char *sel[64];
    int nsel = 0, threads = 2, i, j, compile = 0, ran = 0;
    double bw;
    char cpu[256];
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-t") == 0 && i + 1 < argc) threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) csv = argv[++i];
        else if (strcmp(argv[i], "--plant") == 0 && i + 1 < argc) {
            i++;
            plant = strcmp(argv[i], "fail") == 0 ? PLANT_FAIL : strcmp(argv[i], "wrong") == 0 ? PLANT_WRONG : PLANT_NONE;
            if (plant == PLANT_NONE) {
                fprintf(stderr, "bench: --plant takes fail or wrong\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--mode") == 0 && i + 1 < argc) {
            only_mode = argv[++i];
        } else if (strcmp(argv[i], "--tune-under-load") == 0) {
            tune_under_load = 1;
        } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            const char *why = "";
            if (strcmp(argv[++i], "cuda") != 0) {
                fprintf(stderr, "bench: --device takes cuda\n");
                return 2;
            }
            if (!tc_cuda_available(&why)) {
                fprintf(stderr, "bench: --device cuda: no GPU: %s\n", why);
                return 3;
            }
            bench_dev = TC_CUDA;
        } else if (nsel < 64) sel[nsel++] = argv[i];
    }
    for (i = 0; i < nsel; i++) {
        int ok = strcmp(sel[i], "compile") == 0;
        for (j = 0; j < NWORK; j++) ok |= strcmp(sel[i], workloads[j].name) == 0;
        if (!ok) {
            fprintf(stderr, "bench: unknown workload '%s'; known:", sel[i]);
            for (j = 0; j < NWORK; j++) /* once per name, not per batch size */
                if (!name_seen(workloads[j].name, j)) fprintf(stderr, " %s", workloads[j].name);
            fprintf(stderr, " compile\n");
            return 2;
        }
        compile |= strcmp(sel[i], "compile") == 0;
    }
    memset(&o, 0, sizeof o);
    o.num_threads = threads;
    ctx = tc_ctx_create(&o);
    if (!ctx) return 1;
    cpu_name(cpu, sizeof cpu, ctx);
    bw = copy_bandwidth(threads, (size_t)32 << 20);
    fma_flops = fma_peak(threads, tc_ctx_isa(ctx));
    printf("tcompile bench: %s, %d threads, copy bandwidth %.1f GB/s, FMA peak %.1f GFLOP/s (%s)\n", cpu, threads,
           bw / 1e9, fma_flops / 1e9, tc_isa_name(tc_ctx_isa(ctx) < TC_ISA_V128 ? TC_ISA_V128 : tc_ctx_isa(ctx)));
    openblas_load(threads);
    if (!openblas_sgemm) printf("(no libopenblas found: the openblas rows are left out)\n");
    for (j = 0; j < NWORK; j++) {
        int want = nsel == 0;
        for (i = 0; i < nsel; i++) want |= strcmp(sel[i], workloads[j].name) == 0;
        if (want) run_workload(ctx, &workloads[j], threads, bw);
        ran |= want;
    }
    if (ran) { /* (the compile sweep only prints) */
        write_outputs(csv, cpu);
        write_model_report(csv, cpu, threads);
    }
    if (compile) run_compile_sweep(ctx);
    tc_ctx_destroy(ctx);
    free(evict_buf);
    return 0;
}
