/* The allocation-failure sweep (`make check-faults`; tests/run_all.sh runs
 * a bounded one).  Every allocation tcompile makes goes through the hooks
 * below; a scenario's workload is run once to count them, then once per
 * failure point n with the n-th allocation failing (that one only: the
 * ones after it succeed, so what a failure leaves behind is exercised by
 * the rest of the workload).  Each run must show:
 *   - every failure as a clean error: an op's errored tensor, tc_call's
 *     error with an errored (or NULL) tensor in every output and a message,
 *     NULL with a message from tc_safetensors_open, a tc_result with a
 *     message from tc_safetensors_save; an error only where a failure was
 *     injected, and a success only with the right result;
 *   - the context usable after: follow-up calls with nothing failing give
 *     eager's result (the files their tensors);
 *   - no leak: the hooks' live blocks back to the baseline once everything
 *     the workload made is freed, and to 0 after tc_ctx_destroy (built with
 *     -fsanitize=address,undefined, LeakSanitizer checks the rest at exit).
 * Scenarios: an MLP, a transformer block (layer_norm, linear, attention,
 * gelu, residual) and a small conv net (conv2d, batch_norm, relu,
 * max_pool2d, linear), each eagerly, then compiled in each mode (default,
 * reduce-overhead, max-autotune with a fresh cache directory per run) and
 * called on three shapes (a recompile, then the dynamic graph); and a
 * checkpoint saved, opened mapped and copied, and read whole (plus a file
 * whose tensors are converted on load).
 *
 *   check_faults [--every K] [--only NAME[,NAME..]] [--threads T] [--list]
 *
 * --every K sweeps every K-th failure point (with the last one); --only
 * runs the scenarios whose name contains one of the NAMEs; --threads the
 * context's threads (default 1: the allocation order is then the same in
 * every run, so failure point n is the same allocation each time; with
 * more, the kernels' scratch fails on worker threads too).  Each scenario
 * prints its allocations and how its failure points ended: a clean error,
 * absorbed (every result right all the same: a cache entry not kept, a
 * tuning record not written), or not reached (max-autotune's measured
 * choices vary from run to run, and with them its later allocations). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- the hooks: count live blocks, fail the n-th allocation -------------- */

static pthread_mutex_t hook_mu = PTHREAD_MUTEX_INITIALIZER; /* kernels allocate scratch on worker threads */
static long hook_calls, hook_live, hook_fail_at = -1, hook_failed;

static int hook_take(void) { /* 1: this allocation fails */
    int f;
    pthread_mutex_lock(&hook_mu);
    f = hook_calls++ == hook_fail_at;
    if (f) hook_failed++;
    pthread_mutex_unlock(&hook_mu);
    return f;
}
static void hook_add(long d) {
    pthread_mutex_lock(&hook_mu);
    hook_live += d;
    pthread_mutex_unlock(&hook_mu);
}
static long hook_get(const long *v) {
    long x;
    pthread_mutex_lock(&hook_mu);
    x = *v;
    pthread_mutex_unlock(&hook_mu);
    return x;
}
static void hook_arm(long at) {
    pthread_mutex_lock(&hook_mu);
    hook_fail_at = at;
    pthread_mutex_unlock(&hook_mu);
}
static void *hook_malloc(size_t n) {
    void *p;
    if (hook_take()) return NULL;
    if ((p = malloc(n)) != NULL) hook_add(1);
    return p;
}
static void *hook_realloc(void *p, size_t n) {
    void *q;
    if (hook_take()) return NULL;
    q = realloc(p, n);
    if (!p && q) hook_add(1);
    return q;
}
static void hook_free(void *p) {
    if (p) hook_add(-1);
    free(p);
}
/* Kernels this small would stay on the caller's thread: with --threads 2
 * they are split over the workers, whose scratch is then allocated (and
 * fails) there too. */
#ifndef TC_PARALLEL_MIN_WORK
#define TC_PARALLEL_MIN_WORK 64
#endif
#define TC_MALLOC(n) hook_malloc(n)
#define TC_REALLOC(p, n) hook_realloc(p, n)
#define TC_FREE(p) hook_free(p)
#define TCOMPILE_IMPLEMENTATION
#include "../tcompile.h"
#include "tc_test.h"

/* ---- one run's state ------------------------------------------------------- */

#define NSHAPES 3
#define MAXP 16
#define NCK 24 /* tensors in the checkpoint */
#define TOL 1e-4 /* tct_maxrel_scaled: compiled against eager (fused sums, tuned blockings) */

typedef struct run {
    const char *scenario;
    long point;             /* the failure point (-1: the counting run)         */
    tc_ctx *ctx;
    tc_tensor *p[MAXP];     /* parameters (root scope)                          */
    tc_tensor *x[NSHAPES], *ref[NSHAPES]; /* inputs and eager's outputs          */
    tc_tensor *ck[NCK];     /* the checkpoint's tensors                          */
    int saved;              /* the workload's save returned TC_OK                */
    char dir[300];          /* scratch: max-autotune's cache, checkpoint files   */
    int bad;                /* checks failed in this run                         */
    int errors, absorbed;   /* clean errors seen; an injected failure that every
                               result survived (a cache entry not kept, ...)    */
} run;

static int verbose_left = 40; /* failing checks printed, over the whole program */

#define RUN_CHECK(R, cond, ...)                                                             \
    do {                                                                                    \
        if (!(cond)) {                                                                      \
            (R)->bad++;                                                                     \
            if (verbose_left > 0) {                                                         \
                verbose_left--;                                                             \
                fprintf(stderr, "  %s:%d: %s, failure point %ld: ", __FILE__, __LINE__,    \
                        (R)->scenario, (R)->point);                                         \
                fprintf(stderr, __VA_ARGS__);                                               \
                fprintf(stderr, "\n");                                                      \
            }                                                                               \
        }                                                                                   \
    } while (0)

static tc_tensor *randn(tc_ctx *c, int nd, const int64_t *s, double std, uint64_t seed) {
    return tc_rand_normal(c, nd, s, 0.0, std, seed);
}
static tc_tensor *randu(tc_ctx *c, int64_t n, double lo, double hi, uint64_t seed) {
    return tc_rand_uniform(c, 1, &n, lo, hi, seed);
}

/* ---- the models --------------------------------------------------------------- */

/* x [B, 24] -> 48 -> 48 -> 10 */
static void mlp_params(run *r) {
    int64_t s1[2] = {48, 24}, s2[2] = {48, 48}, s3[2] = {10, 48};
    r->p[0] = randn(r->ctx, 2, s1, 0.2, 11);
    r->p[1] = randu(r->ctx, 48, -0.1, 0.1, 12);
    r->p[2] = randn(r->ctx, 2, s2, 0.15, 13);
    r->p[3] = randu(r->ctx, 48, -0.1, 0.1, 14);
    r->p[4] = randn(r->ctx, 2, s3, 0.15, 15);
}
static void mlp_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    tc_tensor **p = (tc_tensor **)user, *h;
    h = tc_relu(c, tc_linear(c, in[0], p[0], p[1]));
    h = tc_silu(c, tc_linear(c, h, p[2], p[3]));
    out[0] = tc_softmax(c, tc_linear(c, h, p[4], NULL), -1);
}
static void mlp_shape(int k, int *nd, int64_t *s) {
    static const int64_t b[NSHAPES] = {4, 7, 5};
    *nd = 2;
    s[0] = b[k];
    s[1] = 24;
}

/* A pre-LN transformer block on x [2, T, 32], 4 heads. */
#define BD 32
#define BH 4
static void block_params(run *r) {
    int64_t sq[2] = {3 * BD, BD}, sp[2] = {BD, BD}, sf[2] = {4 * BD, BD}, so[2] = {BD, 4 * BD};
    r->p[0] = randu(r->ctx, BD, 0.5, 1.5, 21);
    r->p[1] = randu(r->ctx, BD, -0.1, 0.1, 22);
    r->p[2] = randn(r->ctx, 2, sq, 0.1, 23);
    r->p[3] = randu(r->ctx, 3 * BD, -0.1, 0.1, 24);
    r->p[4] = randn(r->ctx, 2, sp, 0.1, 25);
    r->p[5] = randn(r->ctx, 2, sf, 0.1, 26);
    r->p[6] = randu(r->ctx, 4 * BD, -0.1, 0.1, 27);
    r->p[7] = randn(r->ctx, 2, so, 0.05, 28);
}
static void block_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    tc_tensor **p = (tc_tensor **)user, *x = in[0], *h, *qkv[3], *y;
    int64_t hs[4], ms[3];
    int i;
    hs[0] = ms[0] = tc_dim(x, 0);
    hs[1] = ms[1] = tc_dim(x, 1);
    hs[2] = BH;
    hs[3] = BD / BH;
    ms[2] = BD;
    h = tc_linear(c, tc_layer_norm(c, x, 1, p[0], p[1], 1e-5), p[2], p[3]);
    tc_split(c, h, BD, -1, qkv, 3);
    for (i = 0; i < 3; i++) qkv[i] = tc_transpose(c, tc_reshape(c, qkv[i], 4, hs), 1, 2);
    y = tc_scaled_dot_product_attention(c, qkv[0], qkv[1], qkv[2], NULL, 1, 0.0);
    x = tc_add(c, x, tc_linear(c, tc_reshape(c, tc_transpose(c, y, 1, 2), 3, ms), p[4], NULL));
    h = tc_gelu(c, tc_linear(c, tc_layer_norm(c, x, 1, p[0], p[1], 1e-5), p[5], p[6]));
    out[0] = tc_add(c, x, tc_linear(c, h, p[7], NULL));
}
static void block_shape(int k, int *nd, int64_t *s) {
    static const int64_t t[NSHAPES] = {8, 5, 11};
    *nd = 3;
    s[0] = 2;
    s[1] = t[k];
    s[2] = BD;
}

/* conv-bn-relu-pool twice, then a linear layer, on x [N, 3, 8, 8] */
static void conv_params(run *r) {
    int64_t s1[4] = {8, 3, 3, 3}, s2[4] = {8, 8, 3, 3}, sl[2] = {10, 32};
    int i;
    r->p[0] = randn(r->ctx, 4, s1, 0.3, 31);
    r->p[1] = randu(r->ctx, 8, -0.1, 0.1, 32);
    r->p[6] = randn(r->ctx, 4, s2, 0.2, 33);
    r->p[7] = randu(r->ctx, 8, -0.1, 0.1, 34);
    for (i = 0; i < 2; i++) { /* batch norms: mean, var, weight, bias */
        r->p[2 + 6 * i] = randu(r->ctx, 8, -0.2, 0.2, 40 + (uint64_t)i);
        r->p[3 + 6 * i] = randu(r->ctx, 8, 0.5, 1.5, 42 + (uint64_t)i);
        r->p[4 + 6 * i] = randu(r->ctx, 8, 0.8, 1.2, 44 + (uint64_t)i);
        r->p[5 + 6 * i] = randu(r->ctx, 8, -0.1, 0.1, 46 + (uint64_t)i);
    }
    r->p[12] = randn(r->ctx, 2, sl, 0.2, 35);
    r->p[13] = randu(r->ctx, 10, -0.1, 0.1, 36);
}
static void conv_fn(tc_ctx *c, void *user, tc_tensor *const *in, tc_tensor **out) {
    tc_tensor **p = (tc_tensor **)user, *y = in[0];
    tc_conv2d_opts co;
    tc_pool2d_opts po;
    int i;
    memset(&co, 0, sizeof co);
    memset(&po, 0, sizeof po);
    co.padding[0] = co.padding[1] = 1;
    po.kernel[0] = po.kernel[1] = 2;
    for (i = 0; i < 2; i++) {
        tc_tensor **q = p + 6 * i;
        y = tc_conv2d(c, y, q[0], q[1], &co);
        y = tc_max_pool2d(c, tc_relu(c, tc_batch_norm(c, y, q[2], q[3], q[4], q[5], 1e-5)), &po);
    }
    out[0] = tc_linear(c, tc_flatten(c, y, 1, -1), p[12], p[13]);
}
static void conv_shape(int k, int *nd, int64_t *s) {
    static const int64_t n[NSHAPES] = {2, 3, 5};
    *nd = 4;
    s[0] = n[k];
    s[1] = 3;
    s[2] = s[3] = 8;
}

typedef struct model {
    const char *name;
    void (*params)(run *r);
    tc_model_fn fn;
    void (*shape)(int k, int *nd, int64_t *s);
} model;
static const model models[] = {
    {"mlp", mlp_params, mlp_fn, mlp_shape},
    {"block", block_params, block_fn, block_shape},
    {"convnet", conv_params, conv_fn, conv_shape},
};

/* ---- checks ---------------------------------------------------------------- */

static long failed_now(void) { return hook_get(&hook_failed); }

/* An op's result: right (close to ref), or errored after a failure. */
static void check_tensor(run *r, const char *what, tc_tensor *y, tc_tensor *ref, int injected) {
    if (tc_status(y) == TC_OK) {
        double e = tct_maxrel_scaled(y, ref);
        RUN_CHECK(r, e <= TOL, "%s: OK but differs from eager by %g", what, e);
    } else {
        RUN_CHECK(r, injected, "%s: %s with no failure injected: %s", what, tc_result_string(tc_status(y)),
                  tc_error(y));
        RUN_CHECK(r, tc_status(y) == TC_ERR_OOM, "%s: failed with %s, not OOM: %s", what,
                  tc_result_string(tc_status(y)), tc_error(y));
        RUN_CHECK(r, tc_error(y)[0] != 0, "%s: an errored tensor without a message", what);
        r->errors++;
    }
}

/* One compiled call on shape k: the right result, or an error with every
 * output written (errored or NULL) and a message. */
static void check_call(run *r, const char *what, tc_fn *f, int k) {
    static tc_tensor marker;
    tc_tensor *y = &marker;
    long f0 = failed_now();
    tc_result res;
    tc_scope_begin(r->ctx);
    res = tc_call(f, &r->x[k], &y);
    if (res == TC_OK) {
        double e = tct_maxrel_scaled(y, r->ref[k]);
        RUN_CHECK(r, y != &marker && tc_status(y) == TC_OK, "%s: TC_OK with an output not written or errored", what);
        RUN_CHECK(r, e <= TOL, "%s: OK but differs from eager by %g", what, e);
    } else {
        RUN_CHECK(r, failed_now() > f0, "%s: %s with no failure injected in it: %s", what, tc_result_string(res),
                  tc_fn_error(f));
        RUN_CHECK(r, res == TC_ERR_OOM, "%s: failed with %s, not OOM: %s", what, tc_result_string(res), tc_fn_error(f));
        RUN_CHECK(r, y != &marker, "%s: %s with the output left as the caller had it", what, tc_result_string(res));
        RUN_CHECK(r, y == &marker || y == NULL || tc_status(y) != TC_OK, "%s: %s with an output that is not errored",
                  what, tc_result_string(res));
        RUN_CHECK(r, tc_fn_error(f)[0] != 0, "%s: %s with no message", what, tc_result_string(res));
        r->errors++;
    }
    tc_scope_end(r->ctx);
}

/* Empties a scratch directory (max-autotune's cache between runs). */
static void clear_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[600];
    if (!d) return;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
}

/* ---- the model workloads ---------------------------------------------------- */

static tc_mode mode_of(const char *name) {
    return strstr(name, "reduce") ? TC_MODE_REDUCE_OVERHEAD
           : strstr(name, "autotune") ? TC_MODE_MAX_AUTOTUNE
                                        : TC_MODE_DEFAULT;
}

static void model_setup(run *r, const model *m) {
    int k, nd;
    int64_t s[4];
    m->params(r);
    for (k = 0; k < NSHAPES; k++) {
        m->shape(k, &nd, s);
        r->x[k] = randn(r->ctx, nd, s, 1.0, 100 + (uint64_t)k);
        m->fn(r->ctx, r->p, &r->x[k], &r->ref[k]);
        tc_persist(r->ref[k]);
    }
}

static tc_fn *compile(run *r, const model *m) {
    tc_compile_options o;
    memset(&o, 0, sizeof o);
    o.mode = mode_of(r->scenario);
    o.cache_dir = o.mode == TC_MODE_MAX_AUTOTUNE ? r->dir : "";
    return tc_compile(r->ctx, m->fn, r->p, &o);
}

/* Eagerly once, compiled on shapes 0, 0, 1, 2, 0 (a recompile, then the
 * dynamic graph); in max-autotune a second function then reads the
 * choices the first wrote.  Returns the function, or NULL where its
 * compile failed. */
static tc_fn *model_workload(run *r, const model *m) {
    static const int order[] = {0, 0, 1, 2, 0};
    char what[64];
    tc_fn *f, *g;
    tc_tensor *y;
    long f0 = failed_now();
    size_t i;
    tc_scope_begin(r->ctx);
    m->fn(r->ctx, r->p, &r->x[0], &y);
    check_tensor(r, "eager", y, r->ref[0], failed_now() > f0);
    tc_scope_end(r->ctx);
    f0 = failed_now();
    f = compile(r, m);
    RUN_CHECK(r, f || failed_now() > f0, "tc_compile gave NULL with no failure injected");
    if (!f) {
        r->errors++;
        return NULL;
    }
    for (i = 0; i < sizeof order / sizeof order[0]; i++) {
        snprintf(what, sizeof what, "call %d (shape %d)", (int)i, order[i]);
        check_call(r, what, f, order[i]);
    }
    if (mode_of(r->scenario) == TC_MODE_MAX_AUTOTUNE) {
        f0 = failed_now();
        g = compile(r, m);
        RUN_CHECK(r, g || failed_now() > f0, "tc_compile gave NULL with no failure injected");
        if (g) {
            check_call(r, "cached choices, shape 0", g, 0);
            check_call(r, "cached choices, shape 1", g, 1);
            tc_fn_free(g);
        } else r->errors++;
    }
    return f;
}

/* With nothing failing: every shape right, compiled and eagerly. */
static void model_followup(run *r, const model *m, tc_fn *f) {
    int k;
    if (!f) f = compile(r, m);
    RUN_CHECK(r, f != NULL, "tc_compile failed after the workload");
    for (k = 0; f && k < NSHAPES; k++) check_call(r, "follow-up call", f, k);
    tc_scope_begin(r->ctx);
    for (k = 0; k < NSHAPES; k++) {
        tc_tensor *y;
        m->fn(r->ctx, r->p, &r->x[k], &y);
        check_tensor(r, "follow-up eager", y, r->ref[k], 0);
    }
    tc_scope_end(r->ctx);
    tc_fn_free(f);
}

/* ---- the checkpoint workload ------------------------------------------------- */

static const char *const ck_meta[] = {"format", "pt", "note", "fault sweep", NULL};
static char ck_names[NCK][24];
static const char *ck_name_ptr[NCK];

/* A file tcompile does not write: F64, I64 and U8 tensors (converted on
 * load) and a misaligned F32 one (copied). */
static const double conv_f64[3] = {1.5, -2.25, 1e3};
static const int64_t conv_i64[4] = {-7, 0, 123456, 2147483647};
static const unsigned char conv_u8[5] = {0, 1, 200, 255, 7};
static const float conv_f32[2] = {3.5f, -0.125f};
static void write_converted(const char *path) {
    char hdr[512];
    unsigned char buf[8 + 512 + 64];
    size_t hl, off = 0;
    FILE *fp;
    int i;
    snprintf(hdr, sizeof hdr,
             "{\"a\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[0,24]},"
             "\"b\":{\"dtype\":\"I64\",\"shape\":[2,2],\"data_offsets\":[24,56]},"
             "\"c\":{\"dtype\":\"U8\",\"shape\":[5],\"data_offsets\":[56,61]},"
             "\"d\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[61,69]},"
             "\"__metadata__\":{\"k\":\"v\"}}");
    hl = strlen(hdr);
    for (i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(buf + 8, hdr, hl);
    off = 8 + hl;
    memcpy(buf + off, conv_f64, 24); /* little-endian host (x86-64, AArch64) */
    memcpy(buf + off + 24, conv_i64, 32);
    memcpy(buf + off + 56, conv_u8, 5);
    memcpy(buf + off + 61, conv_f32, 8);
    fp = fopen(path, "wb");
    if (!fp) return;
    fwrite(buf, 1, off + 69, fp);
    fclose(fp);
}


static void ck_path(const run *r, char *buf, size_t cap, const char *name) { snprintf(buf, cap, "%s/%s", r->dir, name); }

/* What the converted file loads as (made per run, in its context). */
static tc_tensor *ck_conv_ref[4];
static const char *const ck_conv_names[4] = {"a", "b", "c", "d"};

/* Saves f32 (one strided), f16, bf16, i32, bool, 0-d and empty tensors. */
static void ck_setup(run *r) {
    int64_t s2[2] = {5, 7}, se[2] = {0, 3}, s22[2] = {2, 2}, n3 = 3, n5 = 5, n2 = 2;
    int32_t i64_as_i32[4], u8_as_i32[5];
    float f64_as_f32[3];
    char path[600], err[200];
    int i;
    for (i = 0; i < NCK; i++) {
        tc_tensor *t;
        uint64_t seed = (uint64_t)i + 1;
        switch (i % 8) {
        case 0: t = tc_transpose(r->ctx, tc_rand_uniform(r->ctx, 2, s2, -3, 3, seed), 0, 1); break;
        case 1: t = tc_cast(r->ctx, tc_rand_uniform(r->ctx, 2, s2, -3, 3, seed), TC_F16); break;
        case 2: t = tc_cast(r->ctx, tc_rand_uniform(r->ctx, 2, s2, -3, 3, seed), TC_BF16); break;
        case 3: t = tc_arange(r->ctx, TC_I32, -5, 30 + i, 1); break;
        case 4: t = tc_gt_scalar(r->ctx, tc_rand_uniform(r->ctx, 2, s2, -1, 1, seed), 0.0); break;
        case 5: t = tc_scalar(r->ctx, 2.5 + i); break;
        case 6: t = tc_zeros(r->ctx, TC_F32, 2, se); break;
        default: t = tc_rand_uniform(r->ctx, 2, s2, -1, 1, seed); break;
        }
        r->ck[i] = t;
        snprintf(ck_names[i], sizeof ck_names[i], "layer%d.t%d", i / 8, i % 8);
        ck_name_ptr[i] = ck_names[i];
    }
    ck_path(r, path, sizeof path, "read.safetensors");
    RUN_CHECK(r, tc_safetensors_save(path, NCK, ck_name_ptr, r->ck, ck_meta, err, sizeof err) == TC_OK, "setup: %s",
              err);
    ck_path(r, path, sizeof path, "converted.safetensors");
    write_converted(path);
    for (i = 0; i < 3; i++) f64_as_f32[i] = (float)conv_f64[i];
    for (i = 0; i < 4; i++) i64_as_i32[i] = (int32_t)conv_i64[i];
    for (i = 0; i < 5; i++) u8_as_i32[i] = conv_u8[i];
    ck_conv_ref[0] = tc_from_data(r->ctx, TC_F32, 1, &n3, f64_as_f32);
    ck_conv_ref[1] = tc_from_data(r->ctx, TC_I32, 2, s22, i64_as_i32);
    ck_conv_ref[2] = tc_from_data(r->ctx, TC_I32, 1, &n5, u8_as_i32);
    ck_conv_ref[3] = tc_from_data(r->ctx, TC_F32, 1, &n2, conv_f32);
}

/* Every tensor of an open file (and a missing name): equal to what was
 * saved, or errored after a failure injected in that get. */
static void ck_get_all(run *r, tc_safetensors *st, int n, const char *const *names, tc_tensor *const *want,
                       const char *what) {
    char msg[120];
    int i;
    tc_tensor *t;
    long f0;
    tc_scope_begin(r->ctx);
    for (i = 0; i < n; i++) {
        tc_safetensors_info info;
        RUN_CHECK(r, tc_safetensors_info_of(st, i, &info) == TC_OK && strcmp(info.name, names[i]) == 0,
                  "%s: entry %d is not %s", what, i, names[i]);
        f0 = failed_now();
        t = tc_safetensors_get(st, names[i]);
        snprintf(msg, sizeof msg, "%s: get %s", what, names[i]);
        if (tc_status(t) == TC_OK) {
            RUN_CHECK(r, tc_type(t) == tc_type(want[i]) && tct_maxdiff(t, want[i]) == 0, "%s: not what was saved", msg);
        } else check_tensor(r, msg, t, want[i], failed_now() > f0);
    }
    f0 = failed_now();
    t = tc_safetensors_get(st, "no such tensor");
    RUN_CHECK(r, tc_status(t) == TC_ERR_INDEX || (tc_status(t) == TC_ERR_OOM && failed_now() > f0),
              "%s: a missing name gave %s", what, tc_result_string(tc_status(t)));
    tc_scope_end(r->ctx);
}

static void ck_open(run *r, const char *file, int copy, int n, const char *const *names, tc_tensor *const *want,
                    const char *meta_key, const char *meta_value) {
    char path[600], err[300], what[80];
    tc_safetensors_options o;
    tc_safetensors *st;
    long f0 = failed_now();
    memset(&o, 0, sizeof o);
    o.copy = copy;
    snprintf(what, sizeof what, "%s (%s)", file, copy ? "copied" : "mapped");
    ck_path(r, path, sizeof path, file);
    err[0] = 0;
    st = copy ? tc_safetensors_open_with(r->ctx, path, &o, err, sizeof err)
              : tc_safetensors_open(r->ctx, path, err, sizeof err);
    if (!st) {
        RUN_CHECK(r, failed_now() > f0, "%s: open failed with no failure injected: %s", what, err);
        RUN_CHECK(r, err[0] != 0, "%s: open failed with no message", what);
        r->errors++;
        return;
    }
    RUN_CHECK(r, tc_safetensors_count(st) == n, "%s: %d tensors, not %d", what, tc_safetensors_count(st), n);
    RUN_CHECK(r, tc_safetensors_metadata(st, meta_key) && strcmp(tc_safetensors_metadata(st, meta_key), meta_value) == 0,
              "%s: metadata %s lost", what, meta_key);
    if (tc_safetensors_count(st) == n) ck_get_all(r, st, n, names, want, what);
    tc_safetensors_close(st);
}

static void ck_open_all(run *r) {
    int copy;
    for (copy = 0; copy < 2; copy++) {
        ck_open(r, "read.safetensors", copy, NCK, ck_name_ptr, r->ck, "note", "fault sweep");
        ck_open(r, "converted.safetensors", copy, 4, ck_conv_names, ck_conv_ref, "k", "v");
    }
}

static void ck_workload(run *r) {
    char path[600], err[300];
    tc_result res;
    long f0 = failed_now();
    ck_path(r, path, sizeof path, "saved.safetensors");
    err[0] = 0;
    res = tc_safetensors_save(path, NCK, ck_name_ptr, r->ck, ck_meta, err, sizeof err);
    if (res != TC_OK) {
        RUN_CHECK(r, failed_now() > f0, "save: %s with no failure injected: %s", tc_result_string(res), err);
        RUN_CHECK(r, res == TC_ERR_OOM, "save: failed with %s, not OOM: %s", tc_result_string(res), err);
        RUN_CHECK(r, err[0] != 0, "save: failed with no message");
        r->errors++;
    } else r->saved = 1;
    ck_open_all(r);
}

static void ck_followup(run *r) {
    char path[600], err[300];
    if (r->saved) /* a save that said TC_OK wrote the whole file */
        ck_open(r, "saved.safetensors", 0, NCK, ck_name_ptr, r->ck, "note", "fault sweep");
    ck_path(r, path, sizeof path, "saved.safetensors");
    RUN_CHECK(r, tc_safetensors_save(path, NCK, ck_name_ptr, r->ck, ck_meta, err, sizeof err) == TC_OK,
              "follow-up save: %s", err);
    ck_open(r, "saved.safetensors", 1, NCK, ck_name_ptr, r->ck, "note", "fault sweep");
    ck_open_all(r);
}

/* ---- the sweep ------------------------------------------------------------------- */

typedef struct scenario {
    const char *name;
    const model *m; /* NULL: the checkpoint */
} scenario;

static const scenario scenarios[] = {
    {"mlp/default", &models[0]},          {"mlp/reduce-overhead", &models[0]},
    {"mlp/max-autotune", &models[0]},     {"block/default", &models[1]},
    {"block/reduce-overhead", &models[1]}, {"block/max-autotune", &models[1]},
    {"convnet/default", &models[2]},      {"convnet/reduce-overhead", &models[2]},
    {"convnet/max-autotune", &models[2]}, {"checkpoint", NULL},
};

static int threads = 1;
static char scratch_root[256], run_dir[300];

/* One run of a scenario with failure point `point` (-1: none); returns the
 * allocations its workload made. */
static long run_scenario(const scenario *sc, long point, run *r) {
    tc_ctx_options co;
    long base, start, count, live0, fail0;
    int64_t tensors0;
    tc_fn *f = NULL;
    memset(r, 0, sizeof *r);
    r->scenario = sc->name;
    r->point = point;
    snprintf(r->dir, sizeof r->dir, "%s", run_dir);
    clear_dir(r->dir);
    pthread_mutex_lock(&hook_mu);
    hook_calls = hook_live = hook_failed = 0;
    hook_fail_at = -1;
    pthread_mutex_unlock(&hook_mu);
    memset(&co, 0, sizeof co);
    co.num_threads = threads;
    r->ctx = tc_ctx_create(&co);
    if (!r->ctx) {
        RUN_CHECK(r, 0, "tc_ctx_create failed");
        return 0;
    }
    if (sc->m) model_setup(r, sc->m);
    else ck_setup(r);
    tc_ctx_empty_cache(r->ctx);
    base = hook_get(&hook_live);
    tensors0 = tc_ctx_live_tensors(r->ctx);
    start = hook_get(&hook_calls);
    fail0 = failed_now();
    if (point >= 0) hook_arm(start + point);
    if (sc->m) f = model_workload(r, sc->m);
    else ck_workload(r);
    hook_arm(-1);
    count = hook_get(&hook_calls) - start;
    if (point >= 0 && failed_now() > fail0 && r->errors == 0) r->absorbed = 1;
    if (sc->m) model_followup(r, sc->m, f);
    else ck_followup(r);
    tc_ctx_empty_cache(r->ctx);
    live0 = hook_get(&hook_live);
    RUN_CHECK(r, live0 == base, "%ld blocks live after everything the workload made was freed (%ld before)", live0,
              base);
    RUN_CHECK(r, tc_ctx_live_tensors(r->ctx) == tensors0, "%lld tensors live after the workload (%lld before)",
              (long long)tc_ctx_live_tensors(r->ctx), (long long)tensors0);
    tc_ctx_destroy(r->ctx);
    RUN_CHECK(r, hook_get(&hook_live) == 0, "%ld blocks live after tc_ctx_destroy", hook_get(&hook_live));
    return count;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static long every = 1;

static void sweep(const scenario *sc) {
    run r;
    long total, n, swept = 0, errors = 0, absorbed = 0, unreached = 0, bad_points = 0;
    double t0 = now_s();
    total = run_scenario(sc, -1, &r);
    TC_CHECKF(r.bad == 0, "%s: the run without failures failed %d checks", sc->name, r.bad);
    TC_CHECKF(total > 20, "%s: only %ld allocations: the hooks are not in use", sc->name, total);
    for (n = 0; n < total; n = n + every < total || n == total - 1 ? n + every : total - 1) {
        run_scenario(sc, n, &r);
        swept++;
        if (r.bad) bad_points++;
        if (r.errors) errors++;
        else if (r.absorbed) absorbed++;
        else unreached++;
    }
    TC_CHECKF(bad_points == 0, "%s: %ld of %ld failure points failed a check", sc->name, bad_points, swept);
    printf("%-24s %6ld allocations, %6ld failure points swept (every %ld): %ld clean errors, %ld absorbed, "
           "%ld not reached, %ld bad  (%.1f s)\n",
           sc->name, total, swept, every, errors, absorbed, unreached, bad_points, now_s() - t0);
    fflush(stdout);
}

static const scenario *current;
TC_TEST(sweep_current) { sweep(current); }

static int selected(const char *name, const char *only) {
    char buf[256], *tok, *save = NULL;
    if (!only) return 1;
    snprintf(buf, sizeof buf, "%s", only);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (strstr(name, tok)) return 1;
    return 0;
}

int main(int argc, char **argv) {
    const char *only = NULL, *tmp = getenv("TMPDIR");
    size_t i;
    int a, any = 0;
    for (a = 1; a < argc; a++) {
        if (strcmp(argv[a], "--every") == 0 && a + 1 < argc) every = atol(argv[++a]);
        else if (strcmp(argv[a], "--only") == 0 && a + 1 < argc) only = argv[++a];
        else if (strcmp(argv[a], "--threads") == 0 && a + 1 < argc) threads = atoi(argv[++a]);
        else if (strcmp(argv[a], "--list") == 0) {
            for (i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) printf("%s\n", scenarios[i].name);
            return 0;
        } else {
            fprintf(stderr, "usage: %s [--every K] [--only NAME[,NAME..]] [--threads T] [--list]\n", argv[0]);
            return 2;
        }
    }
    if (every < 1) every = 1;
    snprintf(scratch_root, sizeof scratch_root, "%s/tc-faults-XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(scratch_root)) {
        fprintf(stderr, "cannot make a scratch directory %s\n", scratch_root);
        return 1;
    }
    snprintf(run_dir, sizeof run_dir, "%s/run", scratch_root);
    mkdir(run_dir, 0700);
    for (i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++) {
        if (!selected(scenarios[i].name, only)) continue;
        any = 1;
        current = &scenarios[i];
        TC_RUN(sweep_current);
    }
    clear_dir(run_dir);
    rmdir(run_dir);
    rmdir(scratch_root);
    if (!any) {
        fprintf(stderr, "no scenario matches %s (--list)\n", only);
        return 2;
    }
    return TC_TEST_SUMMARY();
}
