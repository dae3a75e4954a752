/* quickstart.c: two small models run eagerly and compiled with tcompile.
 *
 *     make demo
 *     # or: cc -O2 examples/quickstart.c -o quickstart -lm -lpthread
 *     ./quickstart [num_threads]        (default: one per CPU)
 *     ./quickstart --cuda               the same on an NVIDIA GPU: the one
 *                                       change is tc_to on weights and inputs
 *
 * An MLP (784 -> 512 -> 512 -> 10, ReLU, batch 64) and one GPT-2 block
 * (d=384, 6 heads, T=128, batch 4), with random weights.  Each forward pass
 * is plain C calls on tensors: no graph to build, no per-tensor frees, and
 * one error check per result.  Then the same function is compiled: the
 * first call traces it, fuses it into a few kernels and runs them; later
 * calls replay the fused program.
 */
#define _POSIX_C_SOURCE 199309L /* clock_gettime */
#define TCOMPILE_IMPLEMENTATION /* this file holds the implementation too */
#include "../tcompile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RUNS 10

/* --cuda: weights and inputs live on the GPU (TC_CPU: the host).  Ops and
 * compiled calls then run there; nothing else in the program changes. */
static tc_device dev = TC_CPU;

/* The tensor on `dev` (itself when already there), kept at the root. */
static tc_tensor *on_dev(tc_ctx *ctx, tc_tensor *t) {
    tc_tensor *d = tc_to(ctx, t, dev);
    if (d != t) tc_free(t);
    return d;
}

/* GPU work is queued: a timer waits for it to finish. */
static void wait_done(tc_ctx *ctx) {
    if (dev == TC_CUDA) tc_cuda_synchronize(ctx);
}

/* ------------------------------------------------------------------------ */
/* Models                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct mlp {
    tc_tensor *w1, *b1, *w2, *b2, *w3, *b3;   /* weights are [out, in] */
} mlp;

static tc_tensor *mlp_forward(tc_ctx *ctx, const mlp *m, tc_tensor *x) {
    tc_tensor *h = tc_relu(ctx, tc_linear(ctx, x, m->w1, m->b1));
    h = tc_relu(ctx, tc_linear(ctx, h, m->w2, m->b2));
    return tc_linear(ctx, h, m->w3, m->b3);
}

typedef struct gpt2_block {
    int n_head;
    tc_tensor *ln1_w, *ln1_b;
    tc_tensor *attn_w, *attn_b;   /* q, k and v projections stacked: [3d, d] */
    tc_tensor *proj_w, *proj_b;
    tc_tensor *ln2_w, *ln2_b;
    tc_tensor *fc_w, *fc_b;       /* [4d, d] */
    tc_tensor *fc2_w, *fc2_b;     /* [d, 4d] */
} gpt2_block;

/* Pre-LN: x + attn(ln_1(x)), then + mlp(ln_2(x)).  x is [B, T, d]. */
static tc_tensor *gpt2_forward(tc_ctx *ctx, const gpt2_block *m, tc_tensor *x) {
    int64_t B = tc_dim(x, 0), T = tc_dim(x, 1), d = tc_dim(x, 2);
    int64_t heads[4], merged[3];
    tc_tensor *h, *y, *qkv[3];
    int i;

    heads[0] = B; heads[1] = T; heads[2] = m->n_head; heads[3] = d / m->n_head;
    merged[0] = B; merged[1] = T; merged[2] = d;

    h = tc_layer_norm(ctx, x, 1, m->ln1_w, m->ln1_b, 1e-5);
    h = tc_linear(ctx, h, m->attn_w, m->attn_b);
    /* on error every piece is the errored tensor: it flows to the result */
    tc_split(ctx, h, d, -1, qkv, 3);
    for (i = 0; i < 3; i++) /* [B, T, d] -> [B, heads, T, d/heads]: views */
        qkv[i] = tc_transpose(ctx, tc_reshape(ctx, qkv[i], 4, heads), 1, 2);
    y = tc_scaled_dot_product_attention(ctx, qkv[0], qkv[1], qkv[2], NULL, 1, 0.0);
    y = tc_reshape(ctx, tc_transpose(ctx, y, 1, 2), 3, merged);
    x = tc_add(ctx, x, tc_linear(ctx, y, m->proj_w, m->proj_b));

    h = tc_layer_norm(ctx, x, 1, m->ln2_w, m->ln2_b, 1e-5);
    h = tc_gelu_tanh(ctx, tc_linear(ctx, h, m->fc_w, m->fc_b));
    return tc_add(ctx, x, tc_linear(ctx, h, m->fc2_w, m->fc2_b));
}

/* ------------------------------------------------------------------------ */
/* Random weights                                                            */
/* ------------------------------------------------------------------------ */

static uint64_t next_seed = 1;   /* a distinct seed per tensor, reproducible */

static tc_tensor *randn2(tc_ctx *ctx, int64_t rows, int64_t cols, double std) {
    int64_t shape[2];
    shape[0] = rows; shape[1] = cols;
    return on_dev(ctx, tc_rand_normal(ctx, 2, shape, 0.0, std, next_seed++));
}
static tc_tensor *randn1(tc_ctx *ctx, int64_t n, double std) {
    return on_dev(ctx, tc_rand_normal(ctx, 1, &n, 0.0, std, next_seed++));
}
static tc_tensor *full1(tc_ctx *ctx, int64_t n, double value) {
    return on_dev(ctx, tc_full(ctx, TC_F32, 1, &n, value));
}

static mlp mlp_init(tc_ctx *ctx) {
    mlp m;
    m.w1 = randn2(ctx, 512, 784, 0.05); m.b1 = randn1(ctx, 512, 0.01);
    m.w2 = randn2(ctx, 512, 512, 0.05); m.b2 = randn1(ctx, 512, 0.01);
    m.w3 = randn2(ctx, 10, 512, 0.05);  m.b3 = randn1(ctx, 10, 0.01);
    return m;
}

static gpt2_block gpt2_init(tc_ctx *ctx, int64_t d, int n_head) {
    gpt2_block m;
    double std = 0.02;   /* GPT-2's initialisation */
    m.n_head = n_head;
    m.ln1_w = full1(ctx, d, 1.0);              m.ln1_b = full1(ctx, d, 0.0);
    m.attn_w = randn2(ctx, 3 * d, d, std);     m.attn_b = full1(ctx, 3 * d, 0.0);
    m.proj_w = randn2(ctx, d, d, std);         m.proj_b = full1(ctx, d, 0.0);
    m.ln2_w = full1(ctx, d, 1.0);              m.ln2_b = full1(ctx, d, 0.0);
    m.fc_w = randn2(ctx, 4 * d, d, std);       m.fc_b = full1(ctx, 4 * d, 0.0);
    m.fc2_w = randn2(ctx, d, 4 * d, std);      m.fc2_b = full1(ctx, d, 0.0);
    return m;
}

/* ------------------------------------------------------------------------ */
/* Running and timing                                                        */
/* ------------------------------------------------------------------------ */

typedef enum { MODEL_MLP, MODEL_GPT2 } model_kind;

/* One forward pass.  Everything the model creates belongs to the scope and
 * is freed at tc_scope_end, except the result, which tc_keep moves out. */
static tc_tensor *run_once(tc_ctx *ctx, model_kind kind, const void *model, tc_tensor *x) {
    tc_tensor *y;
    tc_scope_begin(ctx);
    y = kind == MODEL_MLP ? mlp_forward(ctx, (const mlp *)model, x)
                          : gpt2_forward(ctx, (const gpt2_block *)model, x);
    tc_keep(y);
    tc_scope_end(ctx);
    return y;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The compiled form: the model as a tc_model_fn. */
typedef struct model_ref {
    model_kind kind;
    const void *model;
} model_ref;

static void compiled_forward(tc_ctx *ctx, void *user, tc_tensor *const *in, tc_tensor **out) {
    const model_ref *r = (const model_ref *)user;
    out[0] = r->kind == MODEL_MLP ? mlp_forward(ctx, (const mlp *)r->model, in[0])
                                  : gpt2_forward(ctx, (const gpt2_block *)r->model, in[0]);
}

static double median_of(double *ms) {
    qsort(ms, RUNS, sizeof ms[0], cmp_double);
    return (ms[RUNS / 2 - 1] + ms[RUNS / 2]) / 2;
}

/* Runs the model once to check it, then RUNS more times for the median. */
static int bench(tc_ctx *ctx, const char *title, model_kind kind, const void *model,
                 tc_tensor *x, double gflop) {
    double ms[RUNS], median, sum, mean_abs;
    char shape[64];
    tc_tensor *y = run_once(ctx, kind, model, x);
    int i;

    /* Errors propagate through every op, so one check of the result covers
     * the whole forward pass; the message names the op and file:line. */
    if (tc_status(y) != TC_OK) {
        fprintf(stderr, "%s failed: %s\n", title, tc_error(y));
        return 1;
    }
    tc_scope_begin(ctx);   /* the checksum's temporaries go too */
    sum = tc_item(tc_sum(ctx, y, 0, NULL, 0));
    mean_abs = tc_item(tc_mean(ctx, tc_abs(ctx, y), 0, NULL, 0));
    tc_scope_end(ctx);
    printf("%-34s out %-14s checksum: sum %+.6f, mean |y| %.6f\n", title,
           tc_describe(y, shape, sizeof shape), sum, mean_abs);
    tc_free(y);   /* kept out to the root, so it is ours to free */

    for (i = 0; i < RUNS; i++) {
        double t0 = now_ms();
        tc_free(run_once(ctx, kind, model, x));
        wait_done(ctx);
        ms[i] = now_ms() - t0;
    }
    median = median_of(ms);
    printf("%-34s %8.2f ms/call eager    (median of %d)  %6.1f GFLOP/s\n", "", median, RUNS,
           gflop / (median * 1e-3));

    /* compiled: the first call traces and compiles, the others replay */
    {
        model_ref ref;
        tc_fn *f;
        tc_explain_info info;
        tc_tensor *yc = NULL, *ye;
        double first, diff;
        ref.kind = kind;
        ref.model = model;
        f = tc_compile(ctx, compiled_forward, &ref, NULL);
        tc_scope_begin(ctx);
        first = now_ms();
        tc_call(f, &x, &yc);
        wait_done(ctx);
        first = now_ms() - first;
        ye = run_once(ctx, kind, model, x);
        diff = tc_item(tc_max(ctx, tc_abs(ctx, tc_sub(ctx, yc, ye)), 0, NULL, 0));
        tc_scope_end(ctx);
        for (i = 0; i < RUNS; i++) {
            double t0;
            tc_scope_begin(ctx);
            t0 = now_ms();
            tc_call(f, &x, &yc);
            wait_done(ctx);
            ms[i] = now_ms() - t0;
            tc_scope_end(ctx);
        }
        tc_explain(f, &info, NULL, 0);
        printf("%-34s %8.2f ms/call compiled (median of %d)  %6.1f GFLOP/s, first call %.1f ms\n", "",
               median_of(ms), RUNS, gflop / (median_of(ms) * 1e-3), first);
        printf("%-34s %d ops: %d kernels op by op -> %d launches (%d fused), max |compiled - eager| %.2g\n", "",
               info.ops, info.kernels_unfused, info.kernels, info.fused_kernels, diff);
        tc_fn_free(f);
    }
    return 0;
}

int main(int argc, char **argv) {
    tc_ctx *ctx = tc_ctx_create(NULL);   /* NULL: defaults, one thread per CPU */
    int64_t xs[3];
    int failed = 0;
    mlp net;
    gpt2_block block;
    tc_tensor *x;
    double gflop;

    if (!ctx) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "--cuda") == 0) {
        const char *why;
        if (!tc_cuda_available(&why)) {
            fprintf(stderr, "no GPU: %s\n", why);
            tc_ctx_destroy(ctx);
            return 1;
        }
        dev = TC_CUDA;
    } else if (argc > 1 && tc_ctx_set_num_threads(ctx, atoi(argv[1])) != TC_OK) {
        fprintf(stderr, "bad thread count: %s\n", argv[1]);
        tc_ctx_destroy(ctx);
        return 1;
    }
    if (dev == TC_CUDA) {
        tc_cuda_info gpu;
        tc_cuda_device_info(&gpu);
        printf("tcompile %s, on %s (sm_%d)\n\n", TC_VERSION_STRING, gpu.name, gpu.sm);
    } else
        printf("tcompile %s, %d thread(s), executor %s\n\n", TC_VERSION_STRING, tc_ctx_num_threads(ctx),
               tc_isa_name(tc_ctx_isa(ctx)));

    /* With no scope open, weights and inputs belong to the root and live
     * until tc_ctx_destroy. */
    net = mlp_init(ctx);
    xs[0] = 64; xs[1] = 784;
    x = on_dev(ctx, tc_rand_normal(ctx, 2, xs, 0.0, 1.0, 100));
    gflop = 2.0 * 64 * (784 * 512 + 512 * 512 + 512 * 10) * 1e-9;
    failed |= bench(ctx, "MLP 784-512-512-10, B=64", MODEL_MLP, &net, x, gflop);

    block = gpt2_init(ctx, 384, 6);
    xs[0] = 4; xs[1] = 128; xs[2] = 384;
    x = on_dev(ctx, tc_rand_normal(ctx, 3, xs, 0.0, 1.0, 200));
    /* the four linears, plus q@k^T and att@v (counted in full, no causal skip) */
    gflop = 2.0 * 4 * 128 * (384.0 * 3 * 384 + 384 * 384 + 2 * 384 * 4 * 384) * 1e-9 +
            2.0 * 2 * 4 * 128 * 128 * 384 * 1e-9;
    failed |= bench(ctx, "GPT-2 block d=384 h=6, B=4 T=128", MODEL_GPT2, &block, x, gflop);

    /* The scopes freed every intermediate: what is left is weights and inputs. */
    printf("\nlive tensors after the runs: %lld (weights and inputs)\n",
           (long long)tc_ctx_live_tensors(ctx));
    tc_ctx_destroy(ctx);
    return failed;
}
